#!/usr/bin/env python3
# Tabulates the RNG collectives and u32 buffers of every dump under dumps/ (see README.md).
import subprocess, re, sys, glob, os, json, collections
def nbytes(ty):
    m = re.match(r'(\w+)\[([\d,]*)\]', ty)
    n = 1
    for v in m.group(2).split(','):
        if v: n *= int(v)
    return n * {'pred': 1, 'bf16': 2}.get(m.group(1), 4)
def summ(d):
    hlo = [p for p in glob.glob(d + '/*after_optimizations.txt') if 'buffer' not in p][0]
    text = open(hlo).read()
    perms = []; a2a = []; ag = []
    for line in text.splitlines():
        m = re.match(r'\s*(ROOT )?%(\S+) = \(?(\w+\[[\d,]*\])\S* .*?(collective-permute-start|collective-permute|all-to-all|all-gather-start|all-gather)\(', line)
        if not m: continue
        if not re.search(r'_uniform|threefry|bernoulli', line): continue
        pairs = re.findall(r'\{(\d+),(\d+)\}', (re.search(r'source_target_pairs=\{(.*?)\}\}', line) or re.search('()', '')).group(1) + '}')
        (perms if m.group(4).startswith('collective-permute') else a2a if m.group(4) == 'all-to-all' else ag).append((m.group(3), pairs, line))
    sent = collections.Counter()
    for ty, pairs, _ in perms:
        for s, t in pairs: sent[int(s)] += nbytes(ty)
    pshapes = collections.Counter((ty, len(p)) for ty, p, _ in perms)
    # u32 values from buffer assignment
    ba = [p for p in glob.glob(d + '/*after_optimizations-buffer-assignment.txt')][0]
    bt = open(ba).read()
    vals = collections.Counter()
    for m in re.finditer(r'value: <\d+ (\S+) @\d+> \(size=(\d+),offset=\d+\): (u32\[[\d,]+\])', bt):
        if int(m.group(2)) > 512: vals[(m.group(3), int(m.group(2)))] += 1
    return dict(perms=len(perms), a2a=len(a2a), ag=len(ag), pshapes=dict(pshapes), maxsent=max(sent.values()) if sent else 0,
                totsent=sum(sent.values()), u32=dict(vals), u32bytes=sum(k[1]*v for k, v in vals.items()))
out = {}
for d in sorted(glob.glob('dumps/*_g1') + glob.glob('dumps/*_g2') + glob.glob('dumps/*_p1')):
    out[os.path.basename(d)] = s = summ(d)
    print('%-22s perm=%-3d a2a=%-2d ag=%-2d maxsent=%-7d u32bytes=%-7d perm_shapes=%s u32=%s' % (os.path.basename(d), s['perms'], s['a2a'], s['ag'], s['maxsent'], s['u32bytes'], s['pshapes'], s['u32']))
json.dump({k: {kk: (str(vv) if isinstance(vv, dict) else vv) for kk, vv in v.items()} for k, v in out.items()}, open('summary.json', 'w'), indent=1)
