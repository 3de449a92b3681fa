/* wc_count_floor: the counting floor of word count, for scale (not a word
 * count: nothing is joined, ordered or printed but the totals).
 * T threads, each over its piece of the memory-mapped file (cut between
 * words), count every word into a table of their own: words found from AVX2
 * letter masks 64 bytes at a time, a word of up to 16 bytes read as two
 * little-endian lanes, lower-cased and cut in registers (a longer word is
 * keyed by its length and offset), one 128-bit multiply to hash, 2^BITS
 * 32-byte slots aligned to 2 MiB with MADV_HUGEPAGE.
 *   cc -O2 -march=native -o wc_count_floor wc_count_floor.c -lpthread
 *   wc_count_floor FILE T D BITS
 * D: the word is counted D words after its slot's prefetch (a ring); with
 * BURST=1 in the environment, D words are prefetched, then all D counted
 * (ember's pattern). OFF=16 in the environment offsets the table by 16
 * bytes (slots straddling cache lines). Prints the words and the sum of the
 * threads' distinct counts. docs/measurements.md has its figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <immintrin.h>
typedef struct { uint64_t a, b; uint64_t count; uint64_t pad; } slot_t;
static const unsigned char *data; static size_t size; static int D; static size_t SLOTS;
static unsigned char isl[256]; static int burst;
typedef struct { size_t start, end; uint64_t words, distinct; } job_t;
static inline uint64_t hash2(uint64_t a, uint64_t b) {
  __uint128_t m = (__uint128_t)(a ^ 0x243f6a8885a308d3ull) * (b ^ 0x13198a2e03707344ull);
  return (uint64_t)m ^ (uint64_t)(m >> 64);
}
static void *run(void *p) {
  job_t *j = p; size_t mask = SLOTS - 1;
  char *raw = aligned_alloc(1 << 21, SLOTS * sizeof(slot_t) + 64); slot_t *t = (slot_t*)(raw + (getenv("OFF") ? atoi(getenv("OFF")) : 0));
  madvise(t, SLOTS * sizeof(slot_t), MADV_HUGEPAGE);
  memset(t, 0, SLOTS * sizeof(slot_t));
  uint64_t ra[64], rb[64], rh[64]; int n = 0; uint64_t words = 0, distinct = 0;
  size_t i = j->start, e = j->end;

  // letters mask per 64-byte block; walk run starts/ends with tzcnt
  size_t base = i & ~(size_t)63; uint64_t cur = 0; int have = 0; size_t ws = 0; int inword = 0;
  for (size_t blk = base; blk < e; blk += 64) {
    __m256i lo = _mm256_loadu_si256((const __m256i*)(data + blk)), hi = _mm256_loadu_si256((const __m256i*)(data + blk + 32));
    #define LET(v) ({ __m256i l = _mm256_or_si256(v, _mm256_set1_epi8(0x20)); \
      __m256i x = _mm256_sub_epi8(l, _mm256_set1_epi8('a')); \
      _mm256_cmpeq_epi8(_mm256_min_epu8(x, _mm256_set1_epi8(25)), x); })
    uint64_t m = (uint32_t)_mm256_movemask_epi8(LET(lo)) | ((uint64_t)(uint32_t)_mm256_movemask_epi8(LET(hi)) << 32);
    if (blk < i) m &= ~0ull << (i - blk);
    if (blk + 64 > e) m &= (e - blk >= 64) ? ~0ull : ((1ull << (e - blk)) - 1);
    uint64_t edges = m ^ ((m << 1) | (uint64_t)inword);
    while (edges) {
      int b = __builtin_ctzll(edges); edges &= edges - 1;
      if (!inword) { ws = blk + b; inword = 1; continue; }
      inword = 0; size_t s = ws, len = blk + b - ws;
      {
    uint64_t a = 0, b = 0;
    if (len <= 16) { uint64_t w0, w1; memcpy(&w0, data + s, 8); memcpy(&w1, data + s + 8, 8);
      uint64_t k0 = len >= 8 ? ~0ull : ((1ull << (8*len)) - 1); uint64_t k1 = len <= 8 ? 0 : (len >= 16 ? ~0ull : ((1ull << (8*(len-8))) - 1));
      a = (w0 | 0x2020202020202020ull) & k0; b = (w1 | 0x2020202020202020ull) & k1; }
    else { a = len; b = s; }
    uint64_t h = hash2(a, b);
    __builtin_prefetch(&t[h & mask]);
    int k = n % D;
    if (!burst && n >= D) { uint64_t x = ra[k], y = rb[k]; size_t q = rh[k] & mask;
      for (;;) { slot_t *sl = &t[q]; if (sl->a == x && sl->b == y) { sl->count++; break; }
        if (!sl->count) { sl->a = x; sl->b = y; sl->count = 1; distinct++; break; } q = (q + 1) & mask; } }
    ra[k] = a; rb[k] = b; rh[k] = h; n++; words++;
    if (burst && n % D == 0) { for (int kk = 0; kk < D; kk++) { uint64_t x = ra[kk], y = rb[kk]; size_t q = rh[kk] & mask;
      for (;;) { slot_t *sl = &t[q]; if (sl->a == x && sl->b == y) { sl->count++; break; }
        if (!sl->count) { sl->a = x; sl->b = y; sl->count = 1; distinct++; break; } q = (q + 1) & mask; } } } }
    }
    inword = (m >> 63) & 1;
  }
  if (inword) { size_t s = ws, len = e - ws; {
    uint64_t a = 0, b = 0;
    if (len <= 16) { uint64_t w0, w1; memcpy(&w0, data + s, 8); memcpy(&w1, data + s + 8, 8);
      uint64_t k0 = len >= 8 ? ~0ull : ((1ull << (8*len)) - 1); uint64_t k1 = len <= 8 ? 0 : (len >= 16 ? ~0ull : ((1ull << (8*(len-8))) - 1));
      a = (w0 | 0x2020202020202020ull) & k0; b = (w1 | 0x2020202020202020ull) & k1; }
    else { a = len; b = s; }
    uint64_t h = hash2(a, b);
    __builtin_prefetch(&t[h & mask]);
    int k = n % D;
    if (!burst && n >= D) { uint64_t x = ra[k], y = rb[k]; size_t q = rh[k] & mask;
      for (;;) { slot_t *sl = &t[q]; if (sl->a == x && sl->b == y) { sl->count++; break; }
        if (!sl->count) { sl->a = x; sl->b = y; sl->count = 1; distinct++; break; } q = (q + 1) & mask; } }
    ra[k] = a; rb[k] = b; rh[k] = h; n++; words++;
    if (burst && n % D == 0) { for (int kk = 0; kk < D; kk++) { uint64_t x = ra[kk], y = rb[kk]; size_t q = rh[kk] & mask;
      for (;;) { slot_t *sl = &t[q]; if (sl->a == x && sl->b == y) { sl->count++; break; }
        if (!sl->count) { sl->a = x; sl->b = y; sl->count = 1; distinct++; break; } q = (q + 1) & mask; } } } } }
  for (int m = burst ? n - n % D : (n > D ? n - D : 0); m < n; m++) { int k = m % D; uint64_t x = ra[k], y = rb[k]; size_t q = rh[k] & mask;
      for (;;) { slot_t *sl = &t[q]; if (sl->a == x && sl->b == y) { sl->count++; break; }
        if (!sl->count) { sl->a = x; sl->b = y; sl->count = 1; distinct++; break; } q = (q + 1) & mask; } }
  j->words = words; j->distinct = distinct; return NULL;
}
int main(int argc, char **argv) {
  int T = atoi(argv[2]); burst = getenv("BURST") != 0; D = atoi(argv[3]); SLOTS = 1ull << atoi(argv[4]);
  for (int c = 0; c < 256; c++) isl[c] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  int fd = open(argv[1], O_RDONLY); struct stat st; fstat(fd, &st); size = st.st_size;
  { unsigned char *r = mmap(0, size + 8192, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0); data = mmap(r, size, PROT_READ, MAP_PRIVATE|MAP_FIXED, fd, 0); }
  job_t jobs[8]; pthread_t th[8];
  for (int k = 0; k < T; k++) { size_t s = size * k / T, e = size * (k + 1) / T;
    if (k) while (s < size && isl[data[s]]) s++; if (k < T - 1) while (e < size && isl[data[e]]) e++;
    jobs[k].start = s; jobs[k].end = e; pthread_create(&th[k], 0, run, &jobs[k]); }
  uint64_t w = 0, d = 0; for (int k = 0; k < T; k++) { pthread_join(th[k], 0); w += jobs[k].words; d += jobs[k].distinct; }
  printf("%lu words %lu distinct-per-worker-sum\n", w, d); return 0;
}
