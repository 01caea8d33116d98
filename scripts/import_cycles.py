"""List the import circles among the modules of src/fairscan.

grimp builds the import graph from the source (every ``import`` statement, function-local
and ``TYPE_CHECKING``-guarded imports included, since grimp reads the syntax tree rather
than running the code); the circles are the strongly connected components with more than
one module (Tarjan's algorithm, iterative). Exit status 1 when any circle exists.

    python scripts/import_cycles.py [--package fairscan] [--quiet]
"""

from __future__ import annotations

import argparse
import sys

import grimp


def strongly_connected(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def import_circles(package: str) -> list[list[str]]:
    graph = grimp.build_graph(package, include_external_packages=False, cache_dir=None)
    nodes = sorted(graph.modules)
    edges = {module: set(graph.find_modules_directly_imported_by(module)) for module in nodes}
    circles = [c for c in strongly_connected(nodes, edges) if len(c) > 1]
    return sorted(circles, key=lambda c: (-len(c), c))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="fairscan")
    parser.add_argument("--quiet", action="store_true", help="print only the count")
    args = parser.parse_args(argv)
    circles = import_circles(args.package)
    print(f"{len(circles)} import circle(s) among {args.package} modules")
    if not args.quiet:
        for circle in circles:
            print(f"  {len(circle)} modules: " + ", ".join(circle))
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
