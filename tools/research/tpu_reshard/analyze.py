#!/usr/bin/env python3
# Prints each RNG collective of one dump (its shape and source-target pairs); see README.md.
"""Tabulate RNG-related collectives and u32 buffers of a dump dir (after_optimizations)."""
import sys, re, glob, gzip, json, collections
def rd(p): return (gzip.open(p, 'rt') if p.endswith('.gz') else open(p)).read()
d = sys.argv[1]
hlo = [p for p in glob.glob(d + '/*after_optimizations.txt*') if 'buffer' not in p and 'live' not in p and 'memory' not in p][0]
text = rd(hlo)
def nbytes(ty):
    m = re.match(r'(\w+)\[([\d,]*)\]', ty)
    if not m: return 0
    n = 1
    for v in m.group(2).split(','):
        if v: n *= int(v)
    return n * {'u32': 4, 'f32': 4, 's32': 4, 'pred': 1, 'bf16': 2, 'u8': 1}.get(m.group(1), 4)
rows = []
for line in text.splitlines():
    m = re.match(r'\s*(ROOT )?%(\S+) = (.*?) (collective-permute-start|all-to-all|all-gather-start|all-gather|all-reduce-start|all-reduce|reduce-scatter)\((.*)$', line)
    if not m: continue
    name, ty, op, rest = m.group(2), m.group(3), m.group(4), m.group(5)
    opname = re.search(r'op_name="([^"]*)"', line)
    opname = opname.group(1) if opname else ''
    if not re.search(r'_uniform|random|threefry|bernoulli|_bits', opname): continue
    first = re.match(r'\(?(\w+\[[\d,]*\])', ty).group(1)
    pairs = re.search(r'source_target_pairs=\{(.*?)\}\}', line)
    groups = re.search(r'replica_groups=(\S+?)[,}] ', line)
    npairs = pairs.group(1).count('{') if pairs else None
    site = re.sub(r'.*?/([a-z_]*dropout|jit\(f\))', r'\1', opname)[:90]
    rows.append(dict(name=name, op=op, shape=first, bytes=nbytes(first), npairs=npairs,
                     pairs=('{' + pairs.group(1) + '}}') if pairs else (groups.group(1) if groups else ''), site=site))
for r in rows:
    print('%-28s %-24s %-24s %6d B pairs=%-3s %s  [%s]' % (r['name'], r['op'], r['shape'], r['bytes'], r['npairs'], r['pairs'], r['site']))
# wire bytes per device (max over devices of bytes sent): for permutes count per device
sent = collections.Counter(); recv = collections.Counter()
for r in rows:
    if r['op'] == 'collective-permute-start':
        for s, t in re.findall(r'\{(\d+),(\d+)\}', r['pairs']):
            sent[int(s)] += r['bytes']; recv[int(t)] += r['bytes']
print('permutes:', sum(1 for r in rows if r['op'] == 'collective-permute-start'),
      'a2a:', sum(1 for r in rows if r['op'] == 'all-to-all'),
      'ag:', sum(1 for r in rows if r['op'].startswith('all-gather')))
if sent:
    print('permute bytes sent per device: max %d, total %d over devices; recv max %d' % (max(sent.values()), sum(sent.values()), max(recv.values())))
    print(' sent by device:', dict(sorted(sent.items())))
# buffer assignment: u32 allocations
ba = [p for p in glob.glob(d + '/*after_optimizations-buffer-assignment.txt*') if 'values' not in p]
if ba:
    bt = rd(ba[0])
    tot = 0; sizes = collections.Counter()
    for m in re.finditer(r'value: <\d+ (\S+) @\d+> \(size=(\d+),offset=\d+\): (u32\[[\d,]*\])(\{[^}]*\})?', bt):
        sizes[(m.group(3), int(m.group(2)))] += 1
    print('u32 logical values (shape, size) -> count:', dict(sizes))
    m = re.search(r'Total bytes used: (\d+)', bt)
    print('temp/prealloc:', re.findall(r'allocation \d+: size (\d+), preallocated-temp', bt), 'total used', m.group(1) if m else None)
