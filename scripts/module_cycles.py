#!/usr/bin/env python3
"""Prints import circles between the modules (files) of a crate's src/, and
between its top-level modules (a folder counts as one).

Each `use crate::...`, `use super::...` and inline `crate::a::b` path is
resolved to the deepest module that exists; a circle is a strongly
connected group of two or more modules. At folder level, a file of one
top-level module importing any file of another is an arrow between the
two: a leaf kept inside a resource's folder, imported from below, shows as
a circle through that resource. Exit status 1 when any is found.
Usage: scripts/module_cycles.py api/src [jobs/src ...]
"""
import os
import re
import sys


def modules(root):
    found = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), root)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            found[tuple(rel)] = os.path.join(dirpath, name)
    return found


def expand(body):
    """Flattens a use tree (`a::{b, c::{d}}`) into paths."""
    body = re.sub(r"\s+", "", body)
    out, depth, start, prefix_stack = [], 0, 0, [""]
    paths, stack, current = [], [""], ""
    i = 0
    token = ""
    while i < len(body):
        ch = body[i]
        if ch == "{":
            stack.append(stack[-1] + token)
            token = ""
        elif ch == ",":
            if token:
                paths.append(stack[-1] + token)
            token = ""
        elif ch == "}":
            if token:
                paths.append(stack[-1] + token)
            token = ""
            stack.pop()
        else:
            token += ch
        i += 1
    if token:
        paths.append(stack[-1] + token)
    return [p.split(" as ")[0] for p in paths]


def edges(mods):
    graph = {m: set() for m in mods}
    for mod, path in mods.items():
        src = re.sub(r"//[^\n]*", "", open(path).read())
        targets = []
        # Only top-level `use`s: an indented one sits in an inline module
        # (`mod tests`), where `super` is this file's module itself.
        for m in re.finditer(r"^use\s+((?:crate|super)::[^;]*);", src, re.S | re.M):
            targets += expand(m.group(1))
        targets += re.findall(r"(?<![:\w])crate(?:::\w+)+", src)
        # Paths through a child module (`items::handler`, `use items::X`).
        for child in re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+);", src, re.M):
            if re.search(rf"(?<![:\w]){child}::", src):
                targets.append("crate::" + "::".join(mod + (child,)))
        for t in targets:
            parts = [p for p in t.split("::") if p]
            if parts[0] == "crate":
                base = []
            else:  # super
                base = list(mod[:-1]) if not path.endswith("mod.rs") else list(mod[:-1])
                # super of a file module a/b.rs is a; of a/b/mod.rs is a as well
            rest = parts[1:]
            best = None
            for k in range(len(rest), -1, -1):
                cand = tuple(base + rest[:k])
                if cand in mods:
                    best = cand
                    break
            if best is not None and best != mod and best != ():
                graph[mod].add(best)
    return graph


def folders(graph):
    """The graph between top-level modules (the crate root left out)."""
    top = {}
    for mod, targets in graph.items():
        if not mod:
            continue
        top.setdefault(mod[:1], set())
        for target in targets:
            if target and target[:1] != mod[:1]:
                top[mod[:1]].add(target[:1])
    for targets in list(top.values()):
        for target in targets:
            top.setdefault(target, set())
    return top


def cycles(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted("::".join(g) for g in group))

    for v in graph:
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    failed = False
    for root in sys.argv[1:]:
        for group in cycles(edges(modules(root))):
            failed = True
            print(f"{root}: import circle: {' <-> '.join(group)}")
        for group in cycles(folders(edges(modules(root)))):
            failed = True
            print(f"{root}: import circle between top-level modules: {' <-> '.join(group)}")
    sys.exit(1 if failed else 0)
