"""Every page is wired everywhere a page must be (the "add a page" checklist of
docs/CONTRIBUTING.md): its file in ``pages/`` is in ``app.py``'s navigation and the other way
round, it calls ``page_context()``, docs/dashboard.md has its section under its group, and a
system test runs it (an AppTest). Each check is a function of what it reads, so that a planted
miss is shown to be found."""

from __future__ import annotations

import ast
from pathlib import Path

from repo import REPO

Navigation = dict[str, tuple[str, str]]
"""``pages/x.py`` -> (its group, its title), as ``app.py`` lists them."""


def navigation(app: str) -> Navigation:
    """The pages ``app.py``'s source lists: ``st.Page("pages/x.py", title=...)`` calls, each
    under the key of the ``pages`` dict it stands in (or in a name bound before it)."""
    tree = ast.parse(app)
    named: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_page(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    named[target.id] = node.value
    found: Navigation = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(value, ast.List)):
                continue
            for item in value.elts:
                call = named.get(item.id) if isinstance(item, ast.Name) else item
                if isinstance(call, ast.Call) and _is_page(call):
                    found[_path(call)] = (str(key.value), _title(call))
    return found


def _is_page(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "Page"
    )


def _path(call: ast.Call) -> str:
    first = call.args[0]
    assert isinstance(first, ast.Constant)
    return str(first.value)


def _title(call: ast.Call) -> str:
    for keyword in call.keywords:
        if keyword.arg == "title" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    raise AssertionError(f"st.Page({_path(call)!r}) has no title")


def sections(doc: str) -> dict[str, str]:
    """``### Title`` -> the ``## Group`` it stands under, in a page of the docs."""
    found, group = {}, ""
    for line in doc.splitlines():
        if line.startswith("## "):
            group = line[3:].strip()
        elif line.startswith("### "):
            found[line[4:].strip()] = group
    return found


def pages_run_by_tests(sources: list[str]) -> set[str]:
    """The pages that test sources run: the first argument of ``run_app``/``_run_page`` calls,
    and the keys of a module's ``PAGES`` table (pages a test runs one by one)."""
    found: set[str] = set()
    for source in sources:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("run_app", "_run_page")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.add(str(node.args[0].value))
            elif (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "PAGES" for t in node.targets)
                and isinstance(node.value, ast.Dict)
            ):
                found.update(str(k.value) for k in node.value.keys if isinstance(k, ast.Constant))
    return found


def calls_page_context(source: str) -> bool:
    """Whether a page's source calls ``page_context()``."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "page_context"
        for node in ast.walk(ast.parse(source))
    )


def misses(
    files: list[str],
    nav: Navigation,
    docs: dict[str, str],
    tested: set[str],
    sources: dict[str, str],
) -> list[str]:
    """What the checklist finds missing for the page files ``files`` (``pages/x.py``)."""
    found = []
    for path in files:
        name = Path(path).stem
        if path not in nav:
            found.append(f"{path}: no st.Page line in app.py's navigation")
            continue
        group, title = nav[path]
        if docs.get(title) != group:
            found.append(f"{path}: no '### {title}' section under '## {group}' in dashboard.md")
        if name not in tested:
            found.append(f"{path}: no system test runs it (run_app({name!r}))")
        if not calls_page_context(sources[path]):
            found.append(f"{path}: does not call page_context()")
    found += [f"{path}: in app.py but no such file" for path in nav if path not in files]
    return found


def _tree() -> tuple[list[str], Navigation, dict[str, str], set[str], dict[str, str]]:
    files = sorted(f"pages/{p.name}" for p in (REPO / "pages").glob("*.py"))
    nav = navigation((REPO / "app.py").read_text())
    docs = sections((REPO / "docs" / "dashboard.md").read_text())
    tests = [p.read_text() for p in sorted((REPO / "tests" / "system").rglob("test_*.py"))]
    sources = {path: (REPO / path).read_text() for path in files}
    return files, nav, docs, pages_run_by_tests(tests), sources


def test_every_page_is_wired_documented_and_tested() -> None:
    assert misses(*_tree()) == []


def test_the_scans_find_the_pages() -> None:
    """A guard against scans that find nothing."""
    files, nav, docs, tested, _ = _tree()
    assert len(files) >= 16 and set(nav) == set(files)
    assert nav["pages/simplex.py"] == ("Explore", "Simplex")
    assert docs["Simplex"] == "Explore" and {"simplex", "head", "experiments"} <= tested


def test_a_planted_miss_is_found() -> None:
    files, nav, docs, tested, sources = _tree()
    planted = "pages/planted.py"
    found = misses([*files, planted], nav, docs, tested, {**sources, planted: "x = 1\n"})
    assert found == [f"{planted}: no st.Page line in app.py's navigation"]
    nav = {**nav, planted: ("Explore", "Planted")}
    found = misses([*files, planted], nav, docs, tested, {**sources, planted: "x = 1\n"})
    assert found == [
        f"{planted}: no '### Planted' section under '## Explore' in dashboard.md",
        f"{planted}: no system test runs it (run_app('planted'))",
        f"{planted}: does not call page_context()",
    ]
    assert misses(files[1:], nav, docs, tested, sources)[-2:] == [
        f"{files[0]}: in app.py but no such file",
        f"{planted}: in app.py but no such file",
    ]


def test_the_navigation_scan_reads_app_pys_shape() -> None:
    source = (
        "head = st.Page('pages/head.py', title='Head')\n"
        "pages = {'Explore': [st.Page('pages/simplex.py', title='Simplex'), head]}\n"
    )
    assert navigation(source) == {
        "pages/simplex.py": ("Explore", "Simplex"),
        "pages/head.py": ("Explore", "Head"),
    }
