#!/usr/bin/env python3
"""Word count reducer (and combiner) for Hadoop Streaming and
`ember stream run`.

Reads `word<TAB>count` lines sorted by word on standard input and writes
`word<TAB>total` once per word, in the order it read them. Its output is
of the same form as its input, so it also serves as the combiner.
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
        total += int(count or 0)
    if current is not None:
        out.write(b"%s\t%d\n" % (current, total))


if __name__ == "__main__":
    main()
