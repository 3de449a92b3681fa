#!/usr/bin/env python3
"""Checks that a PNG screenshot is not blank: decodes it with the standard
library alone (zlib and the PNG row filters) and requires a share of
non-background pixels and several distinct colours. Prints what it found;
exits 1 if the image is blank."""

import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, colour = header[:4]
    if depth != 8 or colour not in (2, 6):
        sys.exit(f"{path}: only 8-bit RGB or RGBA PNGs are checked")
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    prev, rows, i = bytearray(stride), [], 0
    for _ in range(height):
        f, line = raw[i], bytearray(raw[i + 1 : i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    path = sys.argv[1]
    width, height, bpp, rows = pixels(path)
    colours, ink = set(), 0
    for row in rows:
        for x in range(0, len(row), bpp):
            px = row[x : x + 3]
            colours.add(px)
            if px != b"\xff\xff\xff":
                ink += 1
    share = ink / (width * height)
    print(f"{path}: {width}x{height}, {100 * share:.1f}% non-white, {len(colours)} colours")
    if share < 0.02 or len(colours) < 8:
        print("blank or nearly blank")
        sys.exit(1)


if __name__ == "__main__":
    main()
