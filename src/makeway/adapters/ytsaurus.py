"""Import a YTsaurus pool tree (JSON/YSON attributes, `yt` CLI snippets, test helpers, tables).

Accepted inputs, one or more files:
  * a JSON or YSON document: ``{"pools": [{name, parent, ...}], "tree": {...}}``, or a nested map
    ``{pool = <attrs> {child = <attrs> {}}}`` (also YT-JSON ``$attributes``/``$value``);
  * shell snippets: ``yt set //sys/pools/a/b/@attr '<yson>'`` and
    ``yt create scheduler_pool --attributes '{name=..; parent_name=..}'`` (the YSON is extracted, with
    a warning that the shell wrapper was ignored);
  * Python test helpers: ``create_pool("p", parent_name=..., attributes={...})`` and
    ``update_pool_tree_config("tree", {...})``;
  * a Markdown table with a ``pool_name`` column (``a/b`` paths) and attribute columns (``x/y`` nests).
YT durations (``*_timeout``, ``*_backoff``, ``*_period``) are milliseconds and become seconds.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path
from typing import Any

from makeway.adapters.detect import check_kind
from makeway.config import MAX_DEPTH, read_text
from makeway.errors import ConfigError

KNOWN_RES = ("cpu", "memory", "gpu", "user_slots", "network")
_DURATION = re.compile(r"(_timeout|_backoff|_period)$")


# -- a small YSON reader (also reads JSON) -----------------------------------------------------------

class _Yson:
    def __init__(self, text: str, file: str):
        self.s, self.i, self.file = text, 0, file
        self.depth = 0

    def fail(self, msg: str) -> ConfigError:
        return ConfigError(f"{self.file}: YSON: offset {self.i}: {msg}")

    def ws(self) -> None:
        s = self.s
        while self.i < len(s):
            if s[self.i].isspace():
                self.i += 1
            elif s.startswith("//", self.i) and not s.startswith("//sys", self.i):
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            else:
                break

    def value(self) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        try:
            return self._value()
        finally:
            self.depth -= 1

    def _value(self) -> Any:
        self.ws()
        if self.i >= len(self.s):
            raise self.fail("unexpected end")
        c = self.s[self.i]
        if c == "<":
            self.i += 1
            attrs = self.mapping(">")
            val = self.value()
            if isinstance(val, dict):
                return {"$attributes": attrs, "$value": val}
            return {"$attributes": attrs, "$value": val}
        if c == "{":
            self.i += 1
            return self.mapping("}")
        if c == "[":
            self.i += 1
            out = []
            while True:
                self.ws()
                if self.s.startswith("]", self.i):
                    self.i += 1
                    return out
                out.append(self.value())
                self.ws()
                if self.i < len(self.s) and self.s[self.i] in ";,":
                    self.i += 1
        if c in "\"'":
            return self.string()
        if c == "%":
            m = re.compile(r"%(true|false|nan|inf|-inf)").match(self.s, self.i)
            if not m:
                raise self.fail("bad literal")
            self.i = m.end()
            word = m.group(1)
            return {"true": True, "false": False}[word] if word in ("true", "false") else float(word)
        if c == "#":
            self.i += 1
            return None
        m = re.compile(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+)u?(?![\w\-.])").match(self.s, self.i)
        if m:
            self.i = m.end()
            t = m.group(0).rstrip("u")
            return float(t) if any(ch in t for ch in ".eE") else int(t)
        m = re.compile(r"[A-Za-z_][\w\-.]*").match(self.s, self.i)
        if m:
            self.i = m.end()
            word = m.group(0)
            return {"true": True, "false": False, "null": None}.get(word, word)
        raise self.fail(f"unexpected {c!r}")

    def string(self) -> str:
        q = self.s[self.i]
        j = self.i + 1
        out = []
        while j < len(self.s) and self.s[j] != q:
            if self.s[j] == "\\" and j + 1 < len(self.s):
                j += 1
            out.append(self.s[j])
            j += 1
        if j >= len(self.s):
            raise self.fail("unterminated string")
        self.i = j + 1
        return "".join(out)

    def mapping(self, close: str) -> dict:
        out: dict = {}
        while True:
            self.ws()
            if self.s.startswith(close, self.i):
                self.i += 1
                return out
            key = self.value()
            self.ws()
            if self.i < len(self.s) and self.s[self.i] in "=:":
                self.i += 1
            else:
                raise self.fail(f"expected '=' after key {key!r}")
            out[str(key)] = self.value()
            self.ws()
            if self.i < len(self.s) and self.s[self.i] in ";,":
                self.i += 1


def parse_yson(text: str, file: str = "<yson>") -> Any:
    p = _Yson(text, file)
    v = p.value()
    p.ws()
    if p.i < len(p.s):
        raise p.fail("trailing text")
    return v


# -- collecting pools ---------------------------------------------------------------------------------

class _Tree:
    def __init__(self) -> None:
        self.pools: dict[str, dict[str, Any]] = {}
        self.parent: dict[str, str | None] = {}
        self.tree: dict[str, Any] = {}

    def pool(self, name: str, parent: str | None = None) -> dict[str, Any]:
        if name not in self.pools:
            self.pools[name] = {}
            self.parent[name] = parent
        elif parent is not None:
            self.parent[name] = parent
        return self.pools[name]

    def set_path(self, names: list[str], attr_path: list[str], value: Any) -> None:
        parent = None
        for n in names:
            self.pool(n, parent)
            parent = n
        if not names:
            target = self.tree
        else:
            target = self.pools[names[-1]]
        for k in attr_path[:-1]:
            target = target.setdefault(k.replace("-", "_"), {})
        if attr_path:
            target[attr_path[-1].replace("-", "_")] = value
        elif isinstance(value, dict):
            target.update(value)


def _pool_path(path: str) -> tuple[list[str], list[str]]:
    """//sys/pools/a/b/@x/y -> (["a", "b"], ["x", "y"]); pool_trees/<tree>/ is skipped."""
    main, _, attr = path.partition("/@")
    parts = [p for p in main.split("/") if p]
    if parts[:2] == ["sys", "pools"]:
        parts = parts[2:]
    elif parts[:2] == ["sys", "pool_trees"]:
        parts = parts[3:]
    return parts, [a for a in attr.split("/") if a]


def _from_document(doc: Any, t: _Tree, file: str, parent: str | None = None) -> None:
    if isinstance(doc, dict) and ("pools" in doc or "tree" in doc or "pool_tree" in doc):
        for k in ("tree", "pool_tree", "config"):
            if isinstance(doc.get(k), dict):
                t.tree.update(doc[k])
        pools = doc.get("pools") or []
        if isinstance(pools, dict):
            _from_document(pools, t, file)
            return
        for i, p in enumerate(pools):
            if not isinstance(p, dict) or "name" not in p:
                raise ConfigError(f"{file}: Pool/#{i}: name: missing")
            attrs = {k: v for k, v in p.items() if k not in ("name", "parent", "parent_name")}
            par = p.get("parent", p.get("parent_name"))
            t.pool(str(p["name"]), None if par in (None, "<Root>", "root") else str(par)).update(attrs)
        return
    if not isinstance(doc, dict):
        raise ConfigError(f"{file}: pool tree: expected a map of pools")
    for name, body in doc.items():
        attrs, children = {}, {}
        if isinstance(body, dict) and "$attributes" in body:
            attrs = body["$attributes"] or {}
            children = body.get("$value") or {}
        elif isinstance(body, dict):
            children = {k: v for k, v in body.items() if isinstance(v, dict) and k not in _ATTR_MAPS}
            attrs = {k: v for k, v in body.items() if k not in children}
        t.pool(name, parent).update(attrs)
        if children:
            _from_document(children, t, file, name)


_ATTR_MAPS = {"strong_guarantee_resources", "min_share_resources", "resource_limits", "integral_guarantees",
              "non_preemptible_resource_usage_threshold", "config"}

_SET = re.compile(r"yt\s+set\s+(\S+)\s+(['\"])(.*?)\2", re.S)
_CREATE = re.compile(r"create\s+scheduler_pool(?!_tree)\s+--attributes\s*=?\s*(['\"])(.*?)\1", re.S)
_PY_CALL = re.compile(r"\b(create_pool|update_pool_tree_config)\s*\(")


def _py_call(text: str, start: int) -> tuple[str, int]:
    depth, j = 0, start
    while j < len(text):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:j], j + 1
        j += 1
    return text[start + 1:], len(text)


def _from_script(text: str, t: _Tree, file: str, warnings: list[str]) -> bool:
    found = False
    text = re.sub(r"\{\{[^{}]*\}\}", "default", text)
    for m in _SET.finditer(text):
        names, attr = _pool_path(m.group(1))
        t.set_path(names, attr, parse_yson(m.group(3), file))
        warnings.append(f"{file}: shell wrapper `yt set {m.group(1)}` ignored; its YSON value was imported")
        found = True
    for m in _CREATE.finditer(text):
        attrs = parse_yson(m.group(2), file)
        if not isinstance(attrs, dict) or "name" not in attrs:
            raise ConfigError(f"{file}: Pool/?: name: missing in create scheduler_pool")
        par = attrs.pop("parent_name", None)
        attrs.pop("pool_tree", None)
        t.pool(str(attrs.pop("name")), par).update(attrs)
        warnings.append(f"{file}: shell wrapper `yt create scheduler_pool` ignored; its attributes were imported")
        found = True
    for m in _PY_CALL.finditer(text):
        body, _ = _py_call(text, m.end() - 1)
        try:
            call = ast.parse(f"f({body})", mode="eval").body
            assert isinstance(call, ast.Call)
            args = [ast.literal_eval(a) for a in call.args]
            kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        except (SyntaxError, ValueError, AssertionError) as exc:
            raise ConfigError(f"{file}: {m.group(1)}: arguments: not literal ({exc})") from None
        if m.group(1) == "create_pool":
            t.pool(str(args[0]), kw.get("parent_name")).update(kw.get("attributes") or {})
        elif len(args) >= 2 and isinstance(args[1], dict):
            t.tree.update(args[1])
        found = True
    return found


def _from_table(text: str, t: _Tree, file: str) -> bool:
    rows = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    if len(rows) < 2:
        return False
    cells = [[c.strip().strip("`") for c in r.strip("|").split("|")] for r in rows]
    head = cells[0]
    if "pool_name" not in head:
        return False
    for row in cells[1:]:
        if all(set(c) <= set("-: ") for c in row):
            continue
        rec = dict(zip(head, row))
        names = [n for n in rec.pop("pool_name").split("/") if n]
        for col, raw in rec.items():
            if raw == "":
                continue
            t.set_path(names, col.split("/"), parse_yson(raw, file))
    return True


# -- producing the makeway config --------------------------------------------------------------------

def _seconds(settings: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in settings.items():
        out[k] = v / 1000.0 if _DURATION.search(k) and isinstance(v, (int, float)) and not isinstance(v, bool) else v
    return out


def _res(file: str, pool: str, field: str, value: Any, used: set[str], warnings: list[str]) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"{file}: Pool/{pool}: {field}: expected a resource map, got {value!r}")
    out = {}
    for r, v in value.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ConfigError(f"{file}: Pool/{pool}: {field}.{r}: not a number: {v!r}")
        if not math.isfinite(v):
            raise ConfigError(f"{file}: Pool/{pool}: {field}.{r}: must be finite, got {v!r}")
        if r == "user_slots":
            warnings.append(f"{file}: Pool/{pool}: {field}.user_slots dropped (makeway has no slot resource)")
            continue
        used.add(r)
        out[r] = v
    return out


def import_files(paths: list[Path]) -> tuple[dict, list[str]]:
    warnings: list[str] = []
    t = _Tree()
    for path in paths:
        check_kind("ytsaurus", Path(path))
    for path in paths:
        file = str(path)
        text = read_text(Path(path))
        body = text.strip()
        if body[:1] in "{<[":
            _from_document(parse_yson(body, file), t, file)
        elif not (_from_script(text, t, file, warnings) or _from_table(text, t, file)):
            raise ConfigError(f"{file}: PoolTree/?: content: no pool tree, yt command or pool table found")
    if not t.pools:
        raise ConfigError(f"{', '.join(map(str, paths))}: PoolTree/?: pools: no pool found")
    used: set[str] = {"cpu", "memory"}
    queues: dict[str, Any] = {"root": {}}
    for name, attrs in t.pools.items():
        if name == "root":
            raise ConfigError(f"{paths[0]}: Pool/root: name: reserved for the implicit root")
        a = _seconds(dict(attrs))
        q: dict[str, Any] = {"parent": t.parent.get(name) or "root"}
        w = a.pop("weight", None)
        if w is not None:
            if not isinstance(w, (int, float)) or w <= 0:
                raise ConfigError(f"{paths[0]}: Pool/{name}: weight: must be a positive number, got {w!r}")
            q["weight"] = w
        g = a.pop("strong_guarantee_resources", a.pop("min_share_resources", None))
        if g is not None:
            q["guaranteed"] = _res(str(paths[0]), name, "strong_guarantee_resources", g, used, warnings)
        lim = a.pop("resource_limits", None)
        if lim is not None:
            q["max"] = _res(str(paths[0]), name, "resource_limits", lim, used, warnings)
        if a:
            q["settings"] = a
        queues[name] = q
    for name, parent in t.parent.items():
        if parent and parent not in queues:
            queues[parent] = {"parent": "root"}
            warnings.append(f"pool {parent!r} is only named as a parent; created under root")
    total_cpu = sum(float((q.get("guaranteed") or {}).get("cpu", 0)) for n, q in queues.items()
                    if q.get("parent") == "root")
    per = 16
    count = max(4, math.ceil(total_cpu / per))
    warnings.append(f"no nodes in a pool tree: synthesised {count} nodes of {per} cpu / 64Gi")
    resources = [r for r in KNOWN_RES if r in used and r != "user_slots"] + sorted(used - set(KNOWN_RES))
    cap: dict[str, Any] = {"cpu": per, "memory": "64Gi"}
    config = {
        "name": "ytsaurus-import",
        "resources": resources,
        "nodes": [{"name": "node", "count": count, "capacity": cap}],
        "queues": queues,
        "preemption": {"model": "ytsaurus", "settings": _seconds(t.tree)},
    }
    return config, warnings


def dumps(config: dict) -> str:
    return json.dumps(config, indent=2)
