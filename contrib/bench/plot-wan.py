#!/usr/bin/env python3
"""plot-wan.py - wan.sh's table as a PNG: fastcat's goodput against -P N, with the link rate
and the other tools (nc.openbsd, socat, iperf3) as horizontal reference lines.

Usage: plot-wan.py TSV PNG

TSV is what wan.sh writes beside its table: '# key value' lines (link_mbit, title) and rows
"tool<TAB>connections<TAB>mbit_s<TAB>seconds<TAB>ok" (connections is N for fastcat -P N, 1 for
plain fastcat, 'auto' for -P auto, '-' for the other tools; mbit_s '-' when no run succeeded).
Python 3 standard library only: the image is drawn into a byte array and written as a PNG with
zlib and struct; the text uses a built-in 3x5 pixel font (upper case, digits, a few signs).
"""
import math
import struct
import sys
import zlib

# 3x5 glyphs, rows top to bottom, '#' set: digits, upper case letters, and - . / : % ( ) + space.
FONT = {
    '0': ['###', '#.#', '#.#', '#.#', '###'], '1': ['.#.', '##.', '.#.', '.#.', '###'],
    '2': ['###', '..#', '###', '#..', '###'], '3': ['###', '..#', '.##', '..#', '###'],
    '4': ['#.#', '#.#', '###', '..#', '..#'], '5': ['###', '#..', '###', '..#', '###'],
    '6': ['###', '#..', '###', '#.#', '###'], '7': ['###', '..#', '.#.', '.#.', '.#.'],
    '8': ['###', '#.#', '###', '#.#', '###'], '9': ['###', '#.#', '###', '..#', '###'],
    'A': ['.#.', '#.#', '###', '#.#', '#.#'], 'B': ['##.', '#.#', '##.', '#.#', '##.'],
    'C': ['.##', '#..', '#..', '#..', '.##'], 'D': ['##.', '#.#', '#.#', '#.#', '##.'],
    'E': ['###', '#..', '##.', '#..', '###'], 'F': ['###', '#..', '##.', '#..', '#..'],
    'G': ['.##', '#..', '#.#', '#.#', '.##'], 'H': ['#.#', '#.#', '###', '#.#', '#.#'],
    'I': ['###', '.#.', '.#.', '.#.', '###'], 'J': ['..#', '..#', '..#', '#.#', '.#.'],
    'K': ['#.#', '#.#', '##.', '#.#', '#.#'], 'L': ['#..', '#..', '#..', '#..', '###'],
    'M': ['#.#', '###', '###', '#.#', '#.#'], 'N': ['##.', '#.#', '#.#', '#.#', '#.#'],
    'O': ['.#.', '#.#', '#.#', '#.#', '.#.'], 'P': ['##.', '#.#', '##.', '#..', '#..'],
    'Q': ['.#.', '#.#', '#.#', '##.', '.##'], 'R': ['##.', '#.#', '##.', '#.#', '#.#'],
    'S': ['.##', '#..', '.#.', '..#', '##.'], 'T': ['###', '.#.', '.#.', '.#.', '.#.'],
    'U': ['#.#', '#.#', '#.#', '#.#', '###'], 'V': ['#.#', '#.#', '#.#', '#.#', '.#.'],
    'W': ['#.#', '#.#', '###', '###', '#.#'], 'X': ['#.#', '#.#', '.#.', '#.#', '#.#'],
    'Y': ['#.#', '#.#', '.#.', '.#.', '.#.'], 'Z': ['###', '..#', '.#.', '#..', '###'],
    '-': ['...', '...', '###', '...', '...'], '.': ['...', '...', '...', '...', '.#.'],
    '/': ['..#', '..#', '.#.', '#..', '#..'], ':': ['...', '.#.', '...', '.#.', '...'],
    '%': ['#.#', '..#', '.#.', '#..', '#.#'], '(': ['.#.', '#..', '#..', '#..', '.#.'],
    ')': ['.#.', '..#', '..#', '..#', '.#.'], '+': ['...', '.#.', '###', '.#.', '...'],
    ' ': ['...', '...', '...', '...', '...'], ',': ['...', '...', '...', '.#.', '#..'],
}

WHITE, BLACK, GREY, LIGHT = (255, 255, 255), (0, 0, 0), (120, 120, 120), (225, 225, 225)
FASTCAT = (200, 40, 40)
REFS = [(30, 90, 200), (20, 150, 60), (150, 60, 170), (200, 130, 0), (0, 150, 160), (90, 90, 90)]


class Canvas:
    """An RGB raster with the few drawing operations a plot needs."""

    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(WHITE * (w * h))

    def dot(self, x, y, c):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = 3 * (y * self.w + x)
            self.px[i:i + 3] = bytes(c)

    def rect(self, x0, y0, x1, y1, c):
        for y in range(min(y0, y1), max(y0, y1) + 1):
            for x in range(min(x0, x1), max(x0, x1) + 1):
                self.dot(x, y, c)

    def line(self, x0, y0, x1, y1, c, width=1, dash=0):
        """A line of the given width; dash > 0 draws dash pixels on, dash off."""
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for i in range(n + 1):
            if dash and (i // dash) % 2:
                continue
            x = round(x0 + (x1 - x0) * i / n)
            y = round(y0 + (y1 - y0) * i / n)
            h = width // 2
            self.rect(x - h, y - h, x - h + width - 1, y - h + width - 1, c)

    def text(self, x, y, s, c, scale=2):
        """s at (x, y), its top left corner; characters the font lacks are left blank."""
        for ch in s.upper():
            for r, row in enumerate(FONT.get(ch, FONT[' '])):
                for k, bit in enumerate(row):
                    if bit == '#':
                        self.rect(x + k * scale, y + r * scale, x + k * scale + scale - 1,
                                  y + r * scale + scale - 1, c)
            x += 4 * scale
        return x

    def png(self, path):
        raw = b''.join(b'\0' + bytes(self.px[3 * y * self.w:3 * (y + 1) * self.w])
                       for y in range(self.h))

        def chunk(kind, data):
            body = kind + data
            return struct.pack('>I', len(data)) + body + struct.pack('>I', zlib.crc32(body))

        with open(path, 'wb') as f:
            f.write(b'\x89PNG\r\n\x1a\n')
            f.write(chunk(b'IHDR', struct.pack('>IIBBBBB', self.w, self.h, 8, 2, 0, 0, 0)))
            f.write(chunk(b'IDAT', zlib.compress(raw, 9)))
            f.write(chunk(b'IEND', b''))


def text_width(s, scale=2):
    return 4 * scale * len(s)


def nice_step(span, ticks=6):
    """A round tick step (1, 2 or 5 times a power of ten) giving about `ticks` ticks."""
    raw = span / ticks
    p = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * p >= raw:
            return m * p
    return 10 * p


def read_tsv(path):
    meta, rows = {}, []
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if not line:
                continue
            if line.startswith('#'):
                key, _, value = line[1:].strip().partition(' ')
                meta[key] = value.strip()
                continue
            cols = line.split('\t')
            if len(cols) < 3 or cols[0] == 'tool' or cols[2] in ('', '-'):
                continue
            rows.append((cols[0], cols[1], float(cols[2])))
    return meta, rows


def plot(meta, rows, path, w=900, h=560):
    series = sorted((int(n), v) for t, n, v in rows if t.startswith('fastcat') and n.isdigit())
    auto = [v for t, n, v in rows if t.startswith('fastcat') and n == 'auto']
    refs = [(t, v) for t, n, v in rows if not t.startswith('fastcat')]
    refs += [('fastcat -P auto', v) for v in auto]
    link = float(meta['link_mbit']) if meta.get('link_mbit', '').replace('.', '').isdigit() else 0
    if link > 0:
        refs.append(('link', link))
    top = max([v for _, v in series] + [v for _, v in refs] + [1]) * 1.08
    step = nice_step(top)
    top = math.ceil(top / step) * step
    ns = [n for n, _ in series] or [1]
    lo, hi = math.log2(min(ns)), math.log2(max(ns))
    if hi - lo < 1:
        lo, hi = lo - 0.5, hi + 0.5

    c = Canvas(w, h)
    left, right, top_px, bottom = 80, w - 190, 50, h - 60

    def px_x(n):
        return round(left + 20 + (math.log2(n) - lo) / (hi - lo) * (right - left - 40))

    def px_y(v):
        return round(bottom - v / top * (bottom - top_px))

    # grid, axes and ticks: Mbit/s up the side, connections (log 2) along the bottom
    v = 0.0
    while v <= top + 1e-9:
        y = px_y(v)
        c.line(left, y, right, y, LIGHT)
        label = '%g' % v
        c.text(left - 8 - text_width(label), y - 5, label, BLACK)
        v += step
    for n in ns:
        x = px_x(n)
        c.line(x, bottom, x, bottom + 5, BLACK)
        c.text(x - text_width(str(n)) // 2, bottom + 10, str(n), BLACK)
    c.line(left, top_px, left, bottom, BLACK, 2)
    c.line(left, bottom, right, bottom, BLACK, 2)
    c.text(left, bottom + 32, 'CONNECTIONS (FASTCAT -P N)', BLACK)
    c.text(10, top_px - 30, 'MBIT/S', BLACK)
    c.text(left + 90, 14, meta.get('title', 'wan.sh')[:90], BLACK)

    # the reference lines, labelled at the right; labels kept apart
    used = []
    for i, (name, val) in enumerate(sorted(refs, key=lambda r: -r[1])):
        col = GREY if name == 'link' else REFS[i % len(REFS)]
        y = px_y(val)
        c.line(left, y, right, y, col, 2, dash=0 if name == 'link' else 8)
        ly = y - 5
        while any(abs(ly - u) < 14 for u in used):
            ly += 14
        used.append(ly)
        c.text(right + 8, ly, '%s %g' % (name, round(val)), col)

    # fastcat's series: a thick line through square marks, each with its value
    for (n0, v0), (n1, v1) in zip(series, series[1:]):
        c.line(px_x(n0), px_y(v0), px_x(n1), px_y(v1), FASTCAT, 3)
    for n, val in series:
        x, y = px_x(n), px_y(val)
        c.rect(x - 4, y - 4, x + 4, y + 4, FASTCAT)
        c.text(x + 8, y - 16, '%g' % round(val), FASTCAT)
    if series:
        c.text(left + 10, top_px + 4, 'FASTCAT -P N', FASTCAT)
    c.png(path)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write('usage: plot-wan.py TSV PNG\n')
        return 2
    meta, rows = read_tsv(argv[1])
    if not rows:
        sys.stderr.write('plot-wan.py: %s: no tool with a result\n' % argv[1])
        return 1
    plot(meta, rows, argv[2])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
