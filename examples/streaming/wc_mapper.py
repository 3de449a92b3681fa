#!/usr/bin/env python3
"""Word count mapper for Hadoop Streaming and `ember stream run`.

Reads text on standard input and writes `word<TAB>1` for every word: a
word is a maximal run of ASCII letters, lower-cased (ember wordcount's
tokenizer); every other byte separates words, so any bytes, invalid UTF-8
included, are read as they are.
"""

import re
import sys

WORD = re.compile(rb"[a-z]+")


def main():
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        words = WORD.findall(line.lower())
        if words:
            out.write(b"\t1\n".join(words) + b"\t1\n")


if __name__ == "__main__":
    main()
