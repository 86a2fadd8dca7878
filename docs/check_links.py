#!/usr/bin/env python3
"""Check the links of README.md, docs/ and bench/RESULTS.md.

Every relative link must name a file or folder of the repository (not
outside it), and a '#fragment' must name a heading of the target file
(GitHub's anchor rule).  Prints each broken link and exits 1 if any.
Run from anywhere: python3 docs/check_links.py
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')


def anchors(path):
    out = set()
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = re.match(r'#+\s+(.*)', line)
            if m:
                a = m.group(1).strip().lower()
                a = re.sub(r'[^\w\- ]', '', a).replace(' ', '-')
                out.add(a)
    return out


def files():
    yield os.path.join(ROOT, 'README.md')
    yield os.path.join(ROOT, 'bench', 'RESULTS.md')
    for d, _, fs in os.walk(os.path.join(ROOT, 'docs')):
        for f in fs:
            if f.endswith('.md'):
                yield os.path.join(d, f)


def main():
    bad = 0
    for src in files():
        if not os.path.exists(src):
            continue
        text = open(src, encoding='utf-8').read()
        text = re.sub(r'```.*?```', '', text, flags=re.S)  # no links in code
        for target in LINK.findall(text):
            if re.match(r'[a-z]+:', target):
                continue  # http:, https:, mailto:
            path, _, frag = target.partition('#')
            full = os.path.normpath(os.path.join(os.path.dirname(src), path)) if path else src
            rel = os.path.relpath(src, ROOT)
            if not full.startswith(ROOT + os.sep) and full != ROOT:
                print('%s: %s points outside the repository' % (rel, target))
                bad += 1
            elif not os.path.exists(full):
                print('%s: %s does not exist' % (rel, target))
                bad += 1
            elif frag and os.path.isfile(full) and frag not in anchors(full):
                print('%s: %s: no heading #%s' % (rel, target, frag))
                bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
