"""Score splits (``headforms why``): every head of a model on T tokens after the forward pass, one
head in full (the Head page's "Why it attends"), and the reduced route against dense ``N x N``.

In one process, the model loaded once, thread counts pinned:

* pass: the forward pass with the hooks that record each layer's attention input;
* per head, interleaved layer by layer (order alternating): the library's split (``2n x 2n``
  eigenproblems in float32 by torch), the same in float64 by numpy, and, for the first head of
  ``--dense-layers`` layers only, the dense reference (an ``N x N`` eigendecomposition of
  ``S_d`` at every d, numpy);
* every head after the pass: the library's loop over heads on 1 and on 2 worker threads;
* one head in full: ``compute_why`` with the detail (its own pass, the split, the vocabulary
  readout through the direct path), median over ``--heads`` heads; and the next head on the
  same text (the pass kept in memory, as the Head page's Next finds it).

``--solvers``: instead, the eigensolvers available for the ``2n x 2n`` problems, on one head's
reduced forms at every distance (``--tokens`` of them), CPU ms per eigenproblem on one thread:
torch's batched ``eigh`` (MKL's, the library's), numpy's, scipy's ``evd`` and ``evr`` drivers,
and ``evr`` asked for the positive eigenpairs only (all the lobe needs, the negative lobe being
the symmetric part minus it).

Wall and CPU seconds of the process are printed (CPU seconds move less with the load of other
jobs). Run: ``.venv/bin/python benchmarks/bench_why.py [--model smollm2-135m] [--tokens 128]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import limit_threads, machine_line, print_table


def timed(work):  # noqa: ANN001, ANN201 - a benchmark's helper
    """``(wall s, CPU s, value)`` of ``work()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = work()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--heads", type=int, default=5, help="single heads timed in full")
    parser.add_argument("--dense-layers", type=int, default=2, help="layers with a dense head")
    parser.add_argument(
        "--quick", action="store_true", help="only the pass, every head and one head in full"
    )
    parser.add_argument("--solvers", action="store_true", help="time the eigensolvers only")
    args = parser.parse_args()
    if args.solvers:
        solvers(args)
        return

    import torch

    from headforms.behaviour import forward
    from headforms.behaviour.run import locate_runnable
    from headforms.behaviour.runnable import runnable
    from headforms.interventions.anatomy import anatomy_of
    from headforms.interventions.text import DEFAULT_TEXT, text_tokens
    from headforms.parallel import ordered_layers
    from headforms.why.capture import capturing
    from headforms.why.compute import _RECORDED, FLOAT32, compute_why, split_head
    from headforms.why.run import request_of
    from headforms.why.shares import first_key_margins, realised_shares
    from headforms.why.split import FLOAT64

    limit_threads(1)
    torch.set_num_threads(1)
    print(machine_line(1))
    model = runnable(locate_runnable(args.model))
    anatomy = anatomy_of(model)
    ids = text_tokens(model, DEFAULT_TEXT, args.tokens)

    def run_pass():  # noqa: ANN202
        with capturing(anatomy) as captured:
            passed = forward.run(model.model, ids, model.n_layers)
        return captured, passed

    run_pass()  # warm
    wall, cpu, (captured, passed) = timed(run_pass)
    rows = {"forward pass with the hooks": (wall, cpu)}
    layers, heads = anatomy.shapes.n_layers, anatomy.shapes.n_heads

    def one(layer: int, head: int, solver=FLOAT32):  # noqa: ANN001, ANN202
        visible = np.isfinite(passed.scores[layer, head])
        split = split_head(anatomy, captured, layer, head, visible, 0, solver)
        return {**realised_shares(split), **first_key_margins(split)}

    totals = {"torch float32": [0.0, 0.0], "numpy float64": [0.0, 0.0]}
    gaps = [0.0]
    for layer in range(0 if args.quick else layers):
        order = list(totals) if layer % 2 == 0 else list(reversed(totals))
        found = {}
        for route in order:
            solver = FLOAT32 if route == "torch float32" else FLOAT64
            for head in range(heads):
                wall, cpu, value = timed(lambda li=layer, h=head, e=solver: one(li, h, e))
                totals[route][0] += wall
                totals[route][1] += cpu
                found[route, head] = value
        gaps.append(
            max(
                abs(found["torch float32", h][c] - found["numpy float64", h][c])
                for h in range(heads)
                for c in ("share_pos", "share_neg", "share_anti")
            )
        )
    for route, (wall, cpu) in totals.items() if not args.quick else ():
        rows[f"split of every head, one by one ({route})"] = (wall, cpu)
    print(f"largest share difference, float32 eigenproblems against float64: {max(gaps):.1e}")

    dense = []
    for layer in np.linspace(0, layers - 1, 0 if args.quick else args.dense_layers).astype(int):
        x = captured.inputs[layer]
        factors = anatomy.head_logit(int(layer), 0).factors
        wall, cpu, _ = timed(lambda x=x, f=factors: _dense_lobes(f, x))
        reduced = timed(lambda layer=layer: one(int(layer), 0))
        dense.append((wall, cpu, reduced[0], reduced[1]))
    for threads in (1, 2):
        work = lambda index: one(*divmod(index, heads))  # noqa: E731
        wall, cpu, _ = timed(
            lambda t=threads, w=work: list(ordered_layers(layers * heads, w, None, t))
        )
        rows[f"every head after the pass, {threads} thread(s)"] = (wall, cpu)
    singles, nexts = [], []
    rng = np.random.default_rng(0)
    for index in rng.choice(layers * heads, size=args.heads, replace=False):
        layer, head = divmod(int(index), heads)
        request = request_of(heads=[(layer, head)], max_tokens=args.tokens, detail=True)
        _RECORDED.clear()  # its own forward pass
        singles.append(timed(lambda r=request: compute_why(model, r))[:2])
        following = request_of(
            heads=[divmod((int(index) + 1) % (layers * heads), heads)],
            max_tokens=args.tokens,
            detail=True,
        )
        nexts.append(timed(lambda r=following: compute_why(model, r))[:2])  # the pass kept
    for name, found in (("one head in full (Head page)", singles), ("the next head", nexts)):
        rows[f"{name}, median"] = (
            statistics.median(s[0] for s in found),
            statistics.median(s[1] for s in found),
        )
    print_table(
        "score splits",
        [
            {"step": name, "wall s": f"{w:.2f}", "CPU s": f"{c:.2f}"}
            for name, (w, c) in rows.items()
        ],
    )
    for wall, cpu, reduced_wall, reduced_cpu in dense:
        print(
            f"one head, dense N x N route: {wall:.1f} s wall, {cpu:.1f} s CPU; reduced: "
            f"{reduced_wall:.2f} s, {reduced_cpu:.2f} s CPU ({cpu / reduced_cpu:.0f}x CPU)"
        )


def solvers(args: argparse.Namespace) -> None:
    """CPU ms per eigenproblem of each solver on one head's reduced forms (module doc)."""
    import scipy.linalg
    import torch

    from headforms.behaviour.run import locate_runnable
    from headforms.behaviour.runnable import runnable
    from headforms.interventions.algebra import span_basis
    from headforms.interventions.anatomy import anatomy_of
    from headforms.why.split import form_terms

    limit_threads(1)
    torch.set_num_threads(1)
    print(machine_line(1))
    anatomy = anatomy_of(runnable(locate_runnable(args.model)))
    layer = anatomy.shapes.n_layers // 2
    factors = anatomy.head_logit(layer, 0).factors
    forms = form_terms(factors, span_basis(factors)).at(np.arange(args.tokens), np.float32)

    def each(solve):  # noqa: ANN001, ANN202
        return lambda: [solve(form) for form in forms]

    routes = {
        "torch.linalg.eigh, batched (the library's)": lambda: torch.linalg.eigh(
            torch.from_numpy(forms)
        ),
        "numpy.linalg.eigh, batched": lambda: np.linalg.eigh(forms),
        "scipy.linalg.eigh, driver evd": each(
            lambda m: scipy.linalg.eigh(m, driver="evd", check_finite=False)
        ),
        "scipy.linalg.eigh, driver evr": each(
            lambda m: scipy.linalg.eigh(m, driver="evr", check_finite=False)
        ),
        "scipy.linalg.eigh, driver evr, positive eigenpairs only": each(
            lambda m: scipy.linalg.eigh(
                m, driver="evr", subset_by_value=(0.0, np.inf), check_finite=False
            )
        ),
    }
    best = {name: float("inf") for name in routes}
    for repeat in range(5):  # interleaved, order alternating; the best of five
        names = list(routes) if repeat % 2 == 0 else list(reversed(routes))
        for name in names:
            best[name] = min(best[name], timed(routes[name])[1])
    print_table(
        f"eigensolvers, {len(forms)} float32 problems of {forms.shape[1]} x {forms.shape[2]} "
        f"(layer {layer}, head 0), best of 5",
        [
            {"solver": name, "CPU ms each": f"{1000 * cpu / len(forms):.3f}"}
            for name, cpu in best.items()
        ],
    )


def _dense_lobes(factors, x: np.ndarray) -> np.ndarray:  # noqa: ANN001
    """The positive lobe of every causal pair from dense ``N x N`` eigenproblems of ``S_d``."""
    from headforms.interventions.algebra import rotate, rotation_angles

    length = len(x)
    out = np.zeros((length, length))
    for d in range(length):
        angle = rotation_angles(factors, np.array([d]))
        turned = rotate(factors.k.T[None], -angle[:, None, :])[0]  # K^T R_d as rows of K^T
        form = turned @ factors.q
        values, vectors = np.linalg.eigh((form + form.T) / 2.0)
        positive = (vectors * np.clip(values, 0, None)) @ vectors.T
        queries = np.arange(d, length)
        out[queries, queries - d] = np.einsum("ij,jk,ik->i", x[queries - d], positive, x[queries])
    return out


if __name__ == "__main__":
    main()
