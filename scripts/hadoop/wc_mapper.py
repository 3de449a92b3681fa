#!/usr/bin/env python3
"""Word count mapper for Hadoop Streaming: prints `word<TAB>1` for every word
of standard input. A word is a maximal run of ASCII letters, lower-cased
(ember's tokenizer); every other byte separates words. Bytes in, bytes out:
no decoding, so any input works.

scripts/test-hadoop-streaming.sh uses examples/streaming/wc_mapper.py when
the repository has it, and this copy otherwise.
"""
import re
import sys

WORD = re.compile(rb"[A-Za-z]+")


def main():
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        for word in WORD.findall(line):
            out.write(word.lower() + b"\t1\n")


if __name__ == "__main__":
    main()
