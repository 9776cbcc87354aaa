#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""compare.py SUITE DIR WAY...: the results of one conformance suite run
several ways (DIR/<way>/<file>.tap, .rc; the first way is the reference,
runc itself), compared test point by test point.

It fails (exit 1) on
  - a test point that passes with the reference and not through another
    way (fails, is skipped or is missing there);
  - a changed exit status: of a suite file (a validation/*.t, a .bats), or
    of a runtime call inside a test that passes both ways (bats prints
    each as `runc ARGS (status=N):`);
  - changed output from inside the container: the diagnostics of a test
    point that passes both ways (runtimetest's actual and expected values,
    what each runc call printed), once what differs from run to run is
    masked (times, UUIDs, temporary directories, the wrapper's path).
A point the reference fails and another way passes is the reference's own
failure (a flaky test): said, never a failure.  Prints each way's counts
and, for each difference, one line."""
import os
import re
import sys

MASKS = [
    (re.compile(r'time=\\?"[^"\\]*\\?"'), 'time=""'),
    (re.compile(r'\b(ERRO|WARN|INFO|DEBU)\[\d+\]'), r'\1[]'),
    (re.compile(r'\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b'), '<uuid>'),
    (re.compile(r'/tmp/ocitest\d+'), '/tmp/ocitest'),
    (re.compile(r'\b(bats-run-|runc\.|bats\.|runc-tmp-recvtty\.)[A-Za-z0-9]{5,}'), r'\1X'),
    (re.compile(r'/bin/(runc|roce-runtime|roce-runtime-engine)/runc\b'), '/bin/WAY/runc'),
    # Go's TempDir names (a word and a random number: /target3333436325/).
    (re.compile(r'(?<=[A-Za-z])[0-9]{6,10}(?=[/"\s]|$)'), 'N'),
    (re.compile(r'[\x00\r]'), ''),
    (re.compile(r'\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)'), '<time>'),
    (re.compile(r'\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4}\b'), '<time>'),
    # stat(1)'s device of a mount made for the container.
    (re.compile(r'\bDevice: [0-9a-f]+h/\d+d'), 'Device: N'),
    (re.compile(r'\bInode: \d+'), 'Inode: N'),
    # runc state's and list's process ids.
    (re.compile(r'("pid":\s*)\d+'), r'\1N'),
    # ls -l's link counts (/proc's is the number of processes) and times.
    (re.compile(r'^(#\s*[-dlcbps][-rwxsStT]{9}\S*\s+)\d+'), r'\1N'),
    (re.compile(r'\b[A-Z][a-z]{2} [ \d]\d \d\d:\d\d\b'), '<mtime>'),
    # Measurements: runc events' stats, a /dev/kmsg record of the host's.
    (re.compile(r'\{"type":"stats".*'), '<stats>'),
    (re.compile(r'\b\d+,\d+,\d+,[-c];.*'), '<kmsg record>'),
    # A NUL the pseudo-terminal shows.
    (re.compile(r'\^@'), ''),
    # Process ids: in runc's errors, runc list's table, runc ps' JSON.
    (re.compile(r'\b(pid|write) \d+'), r'\1 N'),
    (re.compile(r'^(#\s*\S+\s+)\d+(\s+(running|created|stopped|paused)\b)'), r'\1N\2'),
    (re.compile(r'^(#\s*)\[\d+(,\s*\d+)*\]$'), r'\1[N]'),
    # The bats tests' names made of the shell's pid (test-cgroup-$$, pod_$$).
    (re.compile(r'\b(test-cgroup-|pod_)\d+\b'), r'\1N'),
]

# runc --debug's trace (its nsexec stages, with their pids): runc's own
# timeline, which the shim does not run, and whose lines interleave as the
# processes are scheduled.  Its warnings and errors stay.
# So is the log of the seccomp agent runc's tests start in the background
# (contrib/cmd/seccompagent): every syscall it was sent, written whenever it
# runs, into whichever test's output is open then.
DEBUG = re.compile(r'level=debug\b|"level":\s*"debug"|msg="(Waiting for seccomp file descriptors'
                   r'|Received new seccomp fd|Received syscall|Error in NotifReceive)'
                   # and bash's notice of a background job the test killed
                   # (update.bats' recvtty), printed when the shell next looks.
                   r'|line \d+:\s+\d+\s+Killed\b')

# runtime-tools prints some cgroup values through their pointers
# (linux_cgroups_relative_cpus: `actual: 824634746240`): Go heap addresses,
# 0xc000000000 up, new each run.
GO_HEAP = re.compile(r'\b(?:0x)?c0[0-9a-f]{8}\b|\b8[0-9]{11}\b')


def go_heap(m):
    v = m.group(0)
    n = int(v, 16) if not v.isdigit() else int(v)
    return '<go-pointer>' if 0xc000000000 <= n < 0xc100000000 else v


# A test point nested in a diagnostic (runtimetest's own TAP inside the
# container, under its validation point): its number goes.
NESTED = re.compile(r'^(\s+)(not ok|ok) \d+')

POINT = re.compile(r'^(not ok|ok)\s+(\d+)\s*(?:-\s*)?(.*?)\s*$')
SKIP = re.compile(r'#\s*skip\b\s*(.*)$', re.IGNORECASE)


# A line of ps(1), which runc ps runs: its numbers are the moment's (pids,
# times, CPU).
PS_LINE = re.compile(r'\bpts/\d+|^#\s*(UID|PID)\s')


def mask(line):
    if PS_LINE.search(line):
        line = re.sub(r'\d+', 'N', line)
    for rx, to in MASKS:
        line = rx.sub(to, line)
    return GO_HEAP.sub(go_heap, line).rstrip()


def diag_lines(diag):
    """A point's diagnostics compared as a multiset: runtimetest walks Go
    maps, so its nested points and their blocks come in any order."""
    return sorted(NESTED.sub(r'\1\2 N', l) for l in diag)


def points(path):
    """The test points of a TAP file: {key: (status, diagnostics)}, status
    one of ok, not ok, skip; key (description, its nth time in the file)."""
    out, seen = {}, {}
    cur = None
    try:
        with open(path, errors='replace') as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        m = POINT.match(line)
        if m:
            desc = m.group(3)
            s = SKIP.search(desc)
            status = 'skip' if s and m.group(1) == 'ok' else m.group(1)
            if s:
                desc = desc[:s.start()].rstrip()
            # Not by number: runtimetest walks Go maps (random order), so
            # the same points come numbered differently run to run.
            desc = mask(desc)
            seen[desc] = seen.get(desc, 0) + 1
            cur = (desc, seen[desc])
            out[cur] = (status, [])
        elif cur is not None and (line.startswith('#') or line.startswith('  ')):
            if not DEBUG.search(line):
                out[cur][1].append(mask(line))
    return out


def rc(path):
    try:
        with open(path) as f:
            return int(f.read().strip() or -1)
    except (OSError, ValueError):
        return None


def main():
    suite, top, ways = sys.argv[1], sys.argv[2], sys.argv[3:]
    ref = ways[0]
    files = sorted({f[:-3] for w in ways if os.path.isdir(os.path.join(top, w))
                    for f in os.listdir(os.path.join(top, w)) if f.endswith('.rc')})
    counts = {w: {'ok': 0, 'not ok': 0, 'skip': 0} for w in ways}
    diffs, notes = [], []
    for name in files:
        got = {w: points(os.path.join(top, w, name + '.tap')) for w in ways}
        rcs = {w: rc(os.path.join(top, w, name + '.rc')) for w in ways}
        for w in ways:
            for status, _ in got[w].values():
                counts[w][status] += 1
        for w in ways[1:]:
            if rcs[w] != rcs[ref]:
                line = '%s: %s ends %s with %s, %s through %s' % (suite, name, rcs[ref], ref, rcs[w], w)
                (notes if rcs[w] == 0 else diffs).append(line)
            for key in sorted(set(got[ref]) | set(got[w])):
                r_status, r_diag = got[ref].get(key, ('missing', []))
                w_status, w_diag = got[w].get(key, ('missing', []))
                where = '%s: %s: %s%s' % (suite, name, key[0],
                                          ' (#%d)' % key[1] if key[1] > 1 else '')
                if r_status == 'ok' and w_status != 'ok':
                    diffs.append('%s: ok with %s, %s through %s' % (where, ref, w_status, w))
                elif r_status != w_status and w_status == 'ok':
                    notes.append('%s: %s with %s, ok through %s' % (where, r_status, ref, w))
                elif r_status != w_status:
                    diffs.append('%s: %s with %s, %s through %s' % (where, r_status, ref, w_status, w))
                elif r_status == 'ok' and diag_lines(r_diag) != diag_lines(w_diag):
                    r_set, w_set = diag_lines(r_diag), diag_lines(w_diag)
                    changed = [l for l in w_set if l not in r_set][:1] or \
                              [l for l in r_set if l not in w_set][:1] or ['(a line more or less)']
                    diffs.append('%s: output changed through %s: %s' % (where, w, changed[0].strip()))
    summary = '; '.join('%s %d ok, %d not ok, %d skipped' % (w, c['ok'], c['not ok'], c['skip'])
                        for w, c in counts.items())
    print('conformance: %s: %d files: %s' % (suite, len(files), summary))
    for n in notes:
        print('conformance: note: %s (the reference\'s own failure)' % n)
    for d in diffs:
        print('conformance: DIFF: %s' % d)
    if diffs:
        print('conformance: %s: %d difference(s) from %s' % (suite, len(diffs), ref))
        return 1
    print('conformance: %s: %s as %s%s' % (suite, ', '.join(ways[1:]), ref,
                                            ' but for the reference\'s own failures' if notes else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
