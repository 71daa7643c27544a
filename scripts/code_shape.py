#!/usr/bin/env python3
"""The shape of the code, from the sources git tracks (read only, no build needed):

  scripts/code_shape.py files [N]       source files over N lines (default 1000)
  scripts/code_shape.py functions [N]   function bodies over N lines (default 150; a brace-counting
                                        heuristic: lambdas count inside their function)
  scripts/code_shape.py includes        #include edges between rooms: host/src/<room>,
                                        host/src/transport/<t>, plugins/<kind>/<plugin>, libs/<lib>,
                                        programs/<program>, sdk
  scripts/code_shape.py names           where the host compares a string with a plugin's name
  scripts/code_shape.py classes [N] [PATH...]
                                        the N largest classes (default 10) by data members, with
                                        their methods, under PATHs (default: the whole tree); a
                                        class with behaviour is one with a method (plain settings
                                        structs have none)
  scripts/code_shape.py check           exit 1 when a file is over 1000 lines, a function over 150,
                                        the host includes anything of plugins/, two rooms of the
                                        host include each other (directly or round a loop), the
                                        host compares a plugin's name with a string, or a class
                                        with behaviour in the Docker backends' shared code or the
                                        host's agent code has over 20 data members (a ctest runs it)
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


def strip_code(text):
    """`text` without comments, string and character literals (same length per line)."""
    text = re.sub(r'/\*.*?\*/', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)
    out = []
    for raw in text.split('\n'):
        line = re.sub(r'R"([^(]*)\((.*?)\)\1"', '""', raw)
        line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
        line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
        out.append(re.sub(r'//.*', '', line))
    return '\n'.join(out)


def drop_angles(text):
    """`text` with template argument lists removed (`std::map<a, b<c>> x` -> `std::map x`)."""
    prev = None
    while prev != text:
        prev = text
        text = re.sub(r'<[^<>;{}()]*>', '', text)
    return text


def classify(statement):
    """'field', 'method' or None for one member declaration of a class body."""
    st = re.sub(r'^\s*((public|private|protected)\s*:\s*)+', '', statement).strip()
    st = re.sub(r'\[\[[^\]]*\]\]', '', st).strip()
    if not st or re.match(r'(using|friend|typedef|static_assert|enum|struct|class|union)\b', st):
        return None
    st = drop_angles(re.sub(r'^template\s*<.*?>\s*', '', st, flags=re.S))
    head = re.split(r'=|\{', st, maxsplit=1)[0]
    if '(' in head or re.search(r'\boperator\b', st):
        return 'method'
    if re.match(r'(static|inline static)\b', st):
        return None  # shared by every object, not its state
    return 'field'


def classes_in(path):
    """(name, fields, methods, line) of each class or struct defined in `path`."""
    text = strip_code(open(path, encoding='utf-8', errors='replace').read())
    found = []
    for m in re.finditer(r'\b(class|struct)\s+(?:\[\[[^\]]*\]\]\s*)?(\w+)(\s+final)?\s*(:[^;{]*)?\{', text):
        if text[:m.start()].rstrip().endswith(('enum', '<', ',')):
            continue
        i = m.end()
        depth = 1
        statement = ''
        fields = methods = 0
        while i < len(text) and depth > 0:
            ch = text[i]
            if ch == '{':
                # not a body where a parenthesis is open (`ClockFn clock = {}` in a parameter list)
                if depth == 1 and statement.count('(') <= statement.count(')'):
                    kind = classify(statement)
                    is_nested = re.match(r'\s*((public|private|protected)\s*:\s*)*(struct|class|enum|union)\b', statement)
                    if kind == 'method' and not is_nested:
                        # a body: skip it, the declaration ends with it
                        j, d = i + 1, 1
                        while j < len(text) and d > 0:
                            d += {'{': 1, '}': -1}.get(text[j], 0)
                            j += 1
                        methods += 1
                        statement = ''
                        i = j
                        continue
                depth += 1
                statement += ch
            elif ch == '}':
                depth -= 1
                statement += ch
            elif ch == ';' and depth == 1:
                kind = classify(statement)
                if kind == 'field':
                    fields += 1 + drop_angles(re.split(r'=|\{', statement)[0]).count(',')
                elif kind == 'method':
                    methods += 1
                statement = ''
            else:
                statement += ch
            i += 1
        found.append((m.group(2), fields, methods, text.count('\n', 0, m.start()) + 1))
    return found


def class_sizes(paths):
    rows = []
    for f in tracked(*(paths or ['*'])):
        if f.endswith(('.hpp', '.cpp')) and not f.startswith(('tests/', 'bench/')):
            for name, fields, methods, line in classes_in(f):
                rows.append((fields, methods, f, line, name))
    return sorted(rows, reverse=True)


# Where a class with behaviour has at most this many data members (issue 29).
FIELD_LIMIT = 20
FIELD_LIMIT_ROOMS = ['plugins/backends/docker_common', 'host/src/agent']


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
    elif command == 'classes':
        rest = argv[2:]
        count = int(rest.pop(0)) if rest and rest[0].isdigit() else 10
        print(f"{'fields':>6} {'methods':>7}  class")
        for fields, methods, f, line, name in class_sizes(rest)[:count]:
            print(f"{fields:6d} {methods:7d}  {name} ({f}:{line})")
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
        problems += [f"{f}:{line}: class {name} has {fields} data members (at most {FIELD_LIMIT} "
                     f"where a class has behaviour: split it into parts)"
                     for fields, methods, f, line, name in class_sizes(FIELD_LIMIT_ROOMS)
                     if fields > FIELD_LIMIT and methods > 0]
        for p in problems:
            print(p)
        return 1 if problems else 0
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
