"""Pictures of the package drawn from its code, for the Sphinx docs.

In: the source tree of ``gpuarray`` (read, not imported) and, for the
assignment path, the functions named in :data:`ASSIGNMENT_PATH`
(imported, so a renamed or moved step breaks the docs build).  Out: two
directives that render inline SVG:

* ``.. package-graph::`` -- the subpackages and top-level modules as
  boxes, one arrow for each pair that imports the other, layered so that
  arrows point down (towards what is imported);
* ``.. assignment-path::`` -- the steps of ``out[:] = expr`` from the
  factory to the launch, each box naming its function and the first line
  of its docstring.

:func:`import_graph` is also what ``tests/test_layout.py`` checks the
direction of imports with.
"""
import ast
import html
import importlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gpuarray"

#: the path of one assignment, in call order: (label, dotted function)
ASSIGNMENT_PATH = [
    ("assign", "gpuarray.core.backend.Backend.assign"),
    ("dispatch", "gpuarray.fusion.dispatch.Dispatcher.execute"),
    ("plan", "gpuarray.fusion.plan.plan"),
    ("launch shape", "gpuarray.fusion.launch.prepare"),
    ("kernel", "gpuarray.gpu.GPU._kernel"),
    ("generate", "gpuarray.fusion.generate.generate"),
    ("compile", "gpuarray.cuda.compiler.compile_source"),
    ("launch", "gpuarray.fusion.dispatch._Recipe.replay"),
]


# -- reading the imports --------------------------------------------------------
def module_name(path):
    """Dotted name of the module at ``path`` (a package's ``__init__`` is the package)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(name, path, known):
    """Package modules that module ``name`` imports, anywhere in its source."""
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "gpuarray"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.module else base
            elif (node.module or "").split(".")[0] == "gpuarray":
                base = node.module
            else:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return found - {name}


def import_graph():
    """``{module: set of package modules it imports}`` for every module of the package."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _imports(name, path, paths) for name, path in paths.items()}


def unit(module):
    """The box a module belongs to: its subpackage (``core/``) or itself (``gpu.py``)."""
    parts = module.split(".")
    if len(parts) == 1:
        return None  # the package's __init__: public names only
    if (PACKAGE / parts[1]).is_dir():
        return parts[1] + "/"
    return parts[1] + ".py"


def unit_edges(graph):
    """Pairs (importer, imported) between boxes."""
    edges = set()
    for module, deps in graph.items():
        for dep in deps:
            a, b = unit(module), unit(dep)
            if a and b and a != b:
                edges.add((a, b))
    return edges


# -- drawing ----------------------------------------------------------------------
_BOX_W, _BOX_H, _GAP_X, _GAP_Y, _MARGIN = 150, 40, 40, 60, 20
_STYLE = ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
          'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
          '<path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>')


def _layers(boxes, edges):
    """Row of each box: one below everything that imports it."""
    row = {b: 0 for b in boxes}
    for _ in boxes:
        for a, b in edges:
            row[b] = max(row[b], row[a] + 1)
    return row


def _svg(width, height, body):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="13">{_STYLE}{"".join(body)}</svg>')


def _box(x, y, w, h, lines, fill):
    out = [f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="{fill}" '
           f'stroke="#333"/>']
    for i, (text, size) in enumerate(lines):
        ty = y + h / 2 + (i - (len(lines) - 1) / 2) * 15 + 4
        out.append(f'<text x="{x + w / 2}" y="{ty}" text-anchor="middle" font-size="{size}">'
                   f'{html.escape(text)}</text>')
    return "".join(out)


def _line(x1, y1, x2, y2):
    return (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#555" '
            f'marker-end="url(#arrow)"/>')


def _anchor(box, other, pos, edges, out):
    """Where the arrow between ``box`` and ``other`` meets ``box``: its bottom
    edge for outgoing arrows, its top for incoming, spread in the order of the
    other ends so that arrows do not start or end on one point."""
    ends = sorted(((b if out else a) for a, b in edges if (a if out else b) == box),
                  key=lambda name: pos[name][0])
    x, y = pos[box]
    step = _BOX_W / (len(ends) + 1)
    return x + step * (ends.index(other) + 1), y + (_BOX_H if out else 0)


def package_svg():
    """SVG of the subpackages and their imports."""
    edges = unit_edges(import_graph())
    boxes = sorted({b for e in edges for b in e})
    row = _layers(boxes, edges)
    rows = [sorted(b for b in boxes if row[b] == r) for r in range(max(row.values()) + 1)]
    width = max(len(r) for r in rows) * (_BOX_W + _GAP_X) - _GAP_X + 2 * _MARGIN
    pos = {}
    for r, names in enumerate(rows):
        span = len(names) * (_BOX_W + _GAP_X) - _GAP_X
        for i, name in enumerate(names):
            pos[name] = ((width - span) / 2 + i * (_BOX_W + _GAP_X),
                         _MARGIN + r * (_BOX_H + _GAP_Y))
    body = []
    for a, b in sorted(edges):
        start = _anchor(a, b, pos, edges, out=True)
        end = _anchor(b, a, pos, edges, out=False)
        body.append(_line(*start, *end))
    for name, (x, y) in pos.items():
        fill = "#e8f0fe" if name.endswith("/") else "#fdf3e1"
        body.append(_box(x, y, _BOX_W, _BOX_H, [(name, 14)], fill))
    height = len(rows) * (_BOX_H + _GAP_Y) - _GAP_Y + 2 * _MARGIN
    return _svg(width, height, body)


def _resolve(dotted):
    """The function a dotted name names, importing its module."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def path_svg():
    """SVG of the assignment path, one box a step, top to bottom."""
    w, h = 520, 46
    body = []
    for i, (label, dotted) in enumerate(ASSIGNMENT_PATH):
        doc = (_resolve(dotted).__doc__ or "").strip().splitlines()
        if not doc:
            raise ValueError(f"{dotted} needs a docstring: its first line labels the picture")
        doc = doc[0].replace("``", "")
        y = _MARGIN + i * (h + 24)
        if i:
            body.append(_line(_MARGIN + w / 2, y - 24, _MARGIN + w / 2, y))
        name = dotted.replace("gpuarray.", "", 1)
        body.append(_box(_MARGIN, y, w, h, [(f"{label}: {name}", 13), (doc, 11)],
                         "#e8f0fe"))
    height = 2 * _MARGIN + len(ASSIGNMENT_PATH) * (h + 24) - 24
    return _svg(w + 2 * _MARGIN, height, body)


# -- Sphinx -----------------------------------------------------------------------
def setup(app):
    """Register the two directives (docutils is imported here: the import
    graph alone, as the tests read it, needs no documentation tools)."""
    from docutils import nodes
    from docutils.parsers.rst import Directive

    def directive(draw):
        class Picture(Directive):
            def run(self):
                return [nodes.raw("", f'<div class="package-picture">{draw()}</div>',
                                  format="html")]
        return Picture

    app.add_directive("package-graph", directive(package_svg))
    app.add_directive("assignment-path", directive(path_svg))
    return {"parallel_read_safe": True}
