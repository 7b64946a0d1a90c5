"""The promised guarantee fair share (``compute_promised_guarantee_fair_share``, SEMANTICS §2 step 9):
what a pool's subtree would get from its guarantees alone, i.e. the fair share evaluated at
suggestion 0 from that pool down. Kept apart from the main update, which only calls it for trees
that ask."""

from __future__ import annotations

from makeway.policies.ytsaurus import plf
from makeway.policies.ytsaurus.fairshare import child_suggestion
from makeway.policies.ytsaurus.tree import Tree


def promised_tops(tree: Tree) -> list[str]:
    """Pools that compute a promised guarantee fair share: those that ask for it with no asking
    ancestor. YTsaurus refuses nested ones (``NestedPromisedGuaranteeFairSharePools``) and only the
    uppermost pool's setting takes effect (TestPromisedGuaranteeFairShare)."""
    def asks(name: str) -> bool:
        el = tree.elements[name]
        return not el.is_op and bool(el.settings.get("compute_promised_guarantee_fair_share"))
    return [n for n in tree.elements if asks(n) and not any(asks(a) for a in tree.ancestors(n)[1:])]


def promise(tree: Tree, attrs: dict, top: str, ffs, fsbs, orders) -> None:
    """Fair share the subtree would get at suggestion 0: what its guarantees alone promise (§2 step 9)."""
    stack = [(top, 0.0)]
    while stack:
        name, s = stack.pop()
        el = tree.elements[name]
        attrs[name].promised = [float(v) for v in fsbs[name].left(s)]
        if el.is_op or not el.children:
            continue
        fx, fv = ffs[name]
        f = plf._eval1(fx, fv, s)[0]
        kids = orders[name]
        stack.extend(zip(kids, child_suggestion(el.mode, [tree.elements[c].weight for c in kids], f)))
