#!/usr/bin/env python3
"""The shape of the code, from the sources git tracks (read only, no build needed):

  scripts/code_shape.py files [N]       source files over N lines (default 1000)
  scripts/code_shape.py functions [N]   function bodies over N lines (default 150; a brace-counting
                                        heuristic: lambdas count inside their function)
  scripts/code_shape.py includes        #include edges between rooms: host/src/<room>,
                                        host/src/transport/<t>, plugins/<kind>/<plugin>, libs/<lib>,
                                        programs/<program>, sdk
  scripts/code_shape.py names           where the host compares a string with a plugin's name
  scripts/code_shape.py check           exit 1 when a file is over 1000 lines, a function over 150,
                                        the host includes anything of plugins/, two rooms of the
                                        host include each other (directly or round a loop), or the
                                        host compares a plugin's name with a string (a ctest runs it)
"""
import collections
import os
import re
import subprocess
import sys


def tracked(*patterns):
    return [f for f in subprocess.run(['git', 'ls-files', *patterns], capture_output=True,
                                      text=True, check=True).stdout.split() if f]


def scan(path):
    lines = open(path, encoding='utf-8', errors='replace').read().split('\n')
    out = []
    depth = 0; stack = []
    sig = ''
    in_block_comment = False
    for i, raw in enumerate(lines):
        line = re.sub(r'R"([^(]*)\((.*?)\)\1"', '""', raw)
        line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
        line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
        line = re.sub(r'//.*', '', line)
        for ch_i, ch in enumerate(line):
            if ch == '{':
                head = (sig + line[:ch_i]).strip()
                is_fn = bool(re.search(r'\)\s*(const|noexcept|override|final|->[^{]*|\s)*$', head)) and not re.search(r'\b(if|for|while|switch|catch|else)\s*\(', head.split(';')[-1]) and '=' not in head.split(';')[-1].split('(')[0]
                stack.append((i, is_fn and not any(s[1] for s in stack), head.split(';')[-1][-80:]))
                sig = ''
            elif ch == '}':
                if stack:
                    start, fn, name = stack.pop()
                    if fn: out.append((i - start + 1, start + 1, name))
                sig = ''
            elif ch == ';':
                sig = ''
        sig += line + ' '
        if len(sig) > 2000: sig = sig[-2000:]
    return out


def room(path):
    p = path.split('/')
    if p[0] == 'host' and len(p) > 3: return 'host/' + p[2] if p[2] != 'transport' else 'host/transport/' + p[3]
    if p[0] == 'host': return 'host'
    if p[0] == 'plugins' and len(p) > 2: return 'plugins/' + p[1] + '/' + p[2]
    if p[0] in ('libs', 'programs') and len(p) > 1: return p[0] + '/' + p[1]
    return p[0]


def long_files(limit):
    rows = []
    for f in tracked('*.cpp', '*.hpp'):
        with open(f, errors='replace') as text:
            n = sum(1 for _ in text)
        if n > limit:
            rows.append((n, f))
    return sorted(rows, reverse=True)


def long_functions(limit):
    rows = []
    for f in tracked('*.cpp', '*.hpp'):
        for n, start, name in scan(f):
            if n > limit:
                rows.append((n, f, start, name.strip()))
    return sorted(rows, reverse=True)


def include_edges():
    index = collections.defaultdict(set)
    for f in tracked('*.hpp'):
        if f.startswith(('tests/', 'bench/')):
            continue
        parts = f.split('/')
        for i in range(len(parts)):
            index['/'.join(parts[i:])].add(room(f))
    edges = collections.Counter()
    for f in tracked('*.cpp', '*.hpp'):
        if f.startswith(('tests/', 'bench/')):
            continue
        src = room(f)
        with open(f, errors='replace') as text:
            body = text.read()
        for m in re.finditer(r'#include "([^"]+)"', body):
            inc = m.group(1)
            here = os.path.normpath(os.path.join(os.path.dirname(f), inc))
            if os.path.exists(here):
                dst = room(here)
            elif inc in index:
                dst = sorted(index[inc])[0]
            else:
                continue
            if dst != src:
                edges[(src, dst)] += 1
    return edges


def host_loops(edges):
    """Each include edge between two rooms of host/src that lies on a loop (b reaches a back): the
    rooms depend one way (docs/architecture.md, "Which room includes which")."""
    graph = collections.defaultdict(set)
    for (a, b) in edges:
        if a.startswith('host/') and b.startswith('host/'):
            graph[a].add(b)

    def reaches(start, goal):
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph.get(node, ()))
        return False

    return sorted((a, b) for a, targets in list(graph.items()) for b in targets if reaches(b, a))


def plugin_name_comparisons():
    """Lines of host/src that compare a plugin's name with a string literal (`.plugin == "local"`,
    `"docker-api" != backend.plugin`): a decision that depends on a backend asks its traits, and
    what the host prints of a plugin's settings comes from the plugin (SDK 2.4)."""
    rows = []
    pattern = re.compile(r'\bplugin\s*[!=]=\s*"|"\s*[!=]=\s*[\w.>-]*\bplugin\b')
    for f in tracked('host/src/*.cpp', 'host/src/*.hpp'):
        with open(f, errors='replace') as text:
            for i, line in enumerate(text, 1):
                if pattern.search(line):
                    rows.append((f, i, line.strip()))
    return rows


def main(argv):
    command = argv[1] if len(argv) > 1 else 'check'
    limit = int(argv[2]) if len(argv) > 2 else None
    if command == 'files':
        for n, f in long_files(limit or 1000):
            print(f"{n:6d} {f}")
    elif command == 'functions':
        for n, f, start, name in long_functions(limit or 150):
            print(f"{n:5d} {f}:{start}  {name[-70:]}")
    elif command == 'names':
        for f, i, line in plugin_name_comparisons():
            print(f"{f}:{i}: {line}")
    elif command == 'includes':
        for (a, b), n in sorted(include_edges().items()):
            print(f"{a} -> {b} ({n})")
    elif command == 'check':
        problems = [f"{f}: {n} lines (at most 1000)" for n, f in long_files(1000)]
        problems += [f"{f}:{start}: a function of {n} lines (at most 150)"
                     for n, f, start, _ in long_functions(150)]
        problems += [f"{a} includes {b} ({n} times): the host never includes plugins/"
                     for (a, b), n in include_edges().items()
                     if a.startswith('host') and b.startswith('plugins/')]
        problems += [f"{a} includes {b}, which includes {a} back (round a loop): host rooms "
                     "depend one way" for a, b in host_loops(include_edges())]
        problems += [f"{f}:{i}: the host compares a plugin's name with a string: {line}"
                     for f, i, line in plugin_name_comparisons()]
        for p in problems:
            print(p)
        return 1 if problems else 0
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
