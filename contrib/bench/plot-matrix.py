#!/usr/bin/env python3
"""plot-matrix.py - wan-matrix.sh's figures as a PNG: one group of bars a path, plain fastcat
(-P 1, thin, grey), the best fixed count (-P N, blue, N above it) and -P auto (red, its % of the
best fixed count above it), the link rate as a dashed line over the group, and under it the path
("50MS 1G" / "9000 BBR") and the verdict (OK green, MISS red).

Usage: plot-matrix.py TSV PNG

TSV is wan-matrix.sh's matrix.tsv: '# key value' lines (title), a header row naming the columns,
then one row a path (rtt_ms, rate_mbit, mtu, cc, plain, best_n, best_mbit, auto, auto_pct_best,
verdict are used; '-' where a run failed, and such a bar is left out). Python 3 standard library
only: the canvas, the PNG writer and the 3x5 font are plot-wan.py's, loaded from beside this file.
"""
import importlib.util
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
_spec = importlib.util.spec_from_file_location(
    'plot_wan', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'plot-wan.py'))
pw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pw)

PLAIN, BEST, AUTO = (150, 150, 150), (30, 90, 200), pw.FASTCAT
OK, MISS = (20, 150, 60), (200, 40, 40)


def read_tsv(path):
    meta, rows, names = {}, [], None
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
            if names is None:
                names = cols
                continue
            rows.append(dict(zip(names, cols)))
    return meta, rows


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def rate_label(mbit):
    m = num(mbit) or 0
    return ('%gG' % (m / 1000)) if m >= 1000 else ('%gM' % m)


def plot(meta, rows, path, h=560):
    group, left, right_pad, top_px, bottom = 130, 80, 30, 80, h - 90
    w = max(720, left + group * len(rows) + right_pad)
    c = pw.Canvas(w, h)
    vals = []
    for r in rows:
        vals += [v for v in (num(r.get(k)) for k in ('plain', 'best_mbit', 'auto', 'rate_mbit')) if v]
    top = max(vals + [1]) * 1.08
    step = pw.nice_step(top)
    top = math.ceil(top / step) * step

    def px_y(v):
        return round(bottom - v / top * (bottom - top_px))

    v = 0.0
    while v <= top + 1e-9:
        y = px_y(v)
        c.line(left, y, w - right_pad, y, pw.LIGHT)
        label = '%g' % v
        c.text(left - 8 - pw.text_width(label), y - 5, label, pw.BLACK)
        v += step
    c.line(left, top_px, left, bottom, pw.BLACK, 2)
    c.line(left, bottom, w - right_pad, bottom, pw.BLACK, 2)
    c.text(10, top_px - 24, 'MBIT/S', pw.BLACK)
    c.text(10, 12, meta.get('title', 'wan-matrix.sh')[:(w - 20) // 8], pw.BLACK)
    x = left
    for name, col in (('PLAIN (-P 1)', PLAIN), ('BEST FIXED -P N', BEST), ('-P AUTO, % OF BEST', AUTO),
                      ('LINK', pw.GREY)):
        if name == 'LINK':
            c.line(x, 43, x + 14, 43, col, 2, dash=4)
        else:
            c.rect(x, 38, x + 12, 48, col)
        x = c.text(x + 18, 39, name, pw.BLACK) + 16

    for i, r in enumerate(rows):
        g0 = left + i * group + 12
        link = num(r.get('rate_mbit'))
        if link:
            c.line(g0 - 4, px_y(link), g0 + group - 20, px_y(link), pw.GREY, 2, dash=6)
        bars = ((num(r.get('plain')), PLAIN, 0, 16, None),
                (num(r.get('best_mbit')), BEST, 22, 36, 'P' + r.get('best_n', '-')),
                (num(r.get('auto')), AUTO, 64, 36,
                 (r.get('auto_pct_best', '-') + '%') if num(r.get('auto_pct_best')) is not None else None))
        for val, col, dx, bw, label in bars:
            if val is None:
                continue
            c.rect(g0 + dx, px_y(val), g0 + dx + bw - 1, bottom - 1, col)
            if label:
                c.text(g0 + dx + bw // 2 - pw.text_width(label) // 2, px_y(val) - 14, label, col)
        rtt = r.get('rtt_ms', '?')
        line1 = '%sMS %s' % (rtt, rate_label(r.get('rate_mbit')))
        cc = r.get('lab_cc') if r.get('lab_cc') not in (None, '', '-') else r.get('cc', '?')
        line2 = '%s %s' % (r.get('mtu', '?'), cc)
        mid = g0 + 50
        c.text(mid - pw.text_width(line1) // 2, bottom + 10, line1, pw.BLACK)
        c.text(mid - pw.text_width(line2) // 2, bottom + 26, line2, pw.BLACK)
        verdict = r.get('verdict', '-')
        col = OK if verdict == 'ok' else MISS if verdict == 'MISS' else pw.GREY
        c.text(mid - pw.text_width(verdict) // 2, bottom + 46, verdict, col)
    c.png(path)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write('usage: plot-matrix.py TSV PNG\n')
        return 2
    meta, rows = read_tsv(argv[1])
    if not rows:
        sys.stderr.write('plot-matrix.py: %s: no path\n' % argv[1])
        return 1
    plot(meta, rows, argv[2])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
