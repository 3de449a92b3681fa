#!/usr/bin/env python3
"""Word count reducer (and combiner) for Hadoop Streaming: reads
`word<TAB>count` lines sorted by word and prints one `word<TAB>total` line
per run of equal words. Hadoop sorts by key before a combiner and a reducer,
so the same script serves as both.

scripts/test-hadoop-streaming.sh uses examples/streaming/wc_reducer.py when
the repository has it, and this copy otherwise.
"""
import sys


def main():
    out = sys.stdout.buffer
    current, total = None, 0
    for line in sys.stdin.buffer:
        word, _, count = line.rstrip(b"\n").partition(b"\t")
        if word != current:
            if current is not None:
                out.write(b"%s\t%d\n" % (current, total))
            current, total = word, 0
        total += int(count)
    if current is not None:
        out.write(b"%s\t%d\n" % (current, total))


if __name__ == "__main__":
    main()
