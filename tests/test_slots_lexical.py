"""Issue 15: slots that know their context and their cardinality, and paraphrases recognised
by their lexical normal form.

- ``strata.write.slots``: a slot key is ``<family>[@<qualifier>][:<value>]``. Values of a
  multi-valued family (languages, allergies, pets, ...) are keys of their own and never
  supersede each other; a single-valued family holds one value per context; a negation
  retires only the value it names.
- ``strata.write.lexical``: "I'm allergic to peanuts" and "I have a peanut allergy" have
  one normal form, so the write path keeps one memory whatever the embedder scores them;
  "I use vim" / "I use emacs", "I have a dog" / "I have two dogs", "I live in Lisbon" / "I
  lived in Lisbon", "I like tea" / "I don't like tea" stay apart.

Unit tests of both modules (with generated inputs), then the write path end to end on a
real PostgreSQL: POST /v1/memories with slots, and ``strata.write.apply.write`` for what
only an extractor produces (a negation: a slot without a value). Every exclusion sits next
to its control.
"""

from __future__ import annotations

import string
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings as hsettings, strategies as st

from strata.providers import HashingEmbedder
from strata.write import apply as persist
from strata.write import gate as gating
from strata.write import lexical, slots
from strata.write.canonical import canonicalize, value_hash
from strata.write.conflict import RuleJudge, judge_candidate
from strata.write.models import Candidate, Neighbour, Verdict
from strata.write.values import normalise_value

from support import create_ok

ALICE = "users.alice"
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


# ======================================================================================
# slots: the key grammar
# ======================================================================================


@pytest.mark.parametrize(("phrase", "qualifier"), [
    ("for scripting", "scripting"),
    ("for systems programming", "system_programming"),
    ("at work", "work"),
    ("on weekends", "weekend"),
    ("for the new platform", "new_platform"),
    ("for my side projects", "side_project"),
    ("when I'm coding", "coding"),
    ("in the mornings", "morning"),
    ("new_platform", "new_platform"),
])
def test_qualifier_of_normalises_a_context_phrase(phrase, qualifier):
    assert slots.qualifier_of(phrase) == qualifier


def test_qualifier_of_names_no_context_in_frame_words_alone():
    assert slots.qualifier_of("for the") is None
    assert slots.qualifier_of("") is None
    assert slots.qualifier_of("at home") == "home"  # control


def test_key_and_parse():
    """Given a family, a value and a qualifier
    Then ``key`` appends the value only for a multi-valued family, normalises both parts,
    folds a family alias, and ``parse`` gives the parts back."""
    assert slots.key("user.languages", value="French") == "user.languages:french"
    assert slots.key("user.allergy", value="Tree Nuts", qualifier="at work") == (
        "user.allergies@work:tree_nut")
    assert slots.key("user.preferred_language", value="python", qualifier="for scripting") == (
        "user.preferred_language@scripting")
    assert slots.key("user.location", value="Lisbon") == "user.location"
    assert slots.key("User.Employer") == "user.employer"
    assert slots.parse("user.skills@work:kubernetes") == ("user.skills", "work", "kubernetes")
    assert slots.parse("user.location") == ("user.location", None, None)
    # a value may hold the grammar's characters: only the first "@" after the family opens a
    # qualifier, and everything after the first ":" is the value
    assert slots.parse("user.emails:bob@example.com") == ("user.emails", None, "bob@example.com")


@pytest.mark.parametrize("family", sorted(slots.MULTI_VALUED))
def test_multi_valued_families(family):
    assert slots.is_multi(family) and slots.is_multi(slots.key(family, value="x"))
    for alias in slots.MULTI_VALUED[family]:
        assert slots.family_of(alias) == family


@pytest.mark.parametrize("family", sorted(slots.SINGLE_VALUED) + [
    "user.preferred_database", "user.preferred_drink", "user.favorite_colour",
    "project.deploy_target", "user.whatever_this_is"])
def test_single_valued_families_and_the_default(family):
    """An unknown family stays single-valued, as before keys had contexts."""
    assert not slots.is_multi(family)
    assert slots.key(family, value="x") == family


def test_normal_keys_a_multi_valued_value_and_drops_a_single_valued_one():
    assert slots.normal("user.languages", "French") == ("user.languages:french", "french")
    assert slots.normal("user.allergies", "Peanuts") == ("user.allergies:peanut", "peanut")
    # a negation keeps its key, with or without a value part
    assert slots.normal("user.allergies:peanuts", None) == ("user.allergies:peanut", None)
    assert slots.normal("user.allergies", None) == ("user.allergies", None)
    # a value part on a known single-valued family is its value, not a key of its own
    assert slots.normal("user.location:lisbon", None) == ("user.location", "lisbon")
    assert slots.normal("user.location:lisbon", "porto") == ("user.location", "porto")
    # an unknown family written with a value part says it is multi-valued
    assert slots.normal("user.friends_at_school:anna", None) == ("user.friends_at_school:anna", None)
    assert slots.normal(None, "x") == (None, "x")


def test_a_long_value_keeps_a_short_distinct_key():
    a, b = "x" * 400 + "a", "x" * 400 + "b"
    ka, kb = slots.key("user.skills", value=a), slots.key("user.skills", value=b)
    assert ka != kb and len(ka) < 160 and len(kb) < 160
    assert slots.normal("user.skills", a) == (ka, a)


@pytest.mark.parametrize(("content", "value", "qualifier"), [
    ("The user prefers Python for scripting", "python", "scripting"),
    ("The user prefers Rust for systems programming", "rust", "system_programming"),
    ("At work, the user uses a Mac", "macos", "work"),
    ("The user always drinks coffee in the morning", "coffee", "morning"),
    ("The user likes tea on weekends", "tea", "weekend"),
    ("The user prefers tea when coding", "tea", "coding"),
    ("The user now prefers Postgres for the new platform", "postgresql", "new_platform"),
    # not a context: a reason, a duration, a date, the value itself, "in" without a time
    ("The user prefers Emacs for its extensibility", "emacs", None),
    ("The user has used vim for years", "vim", None),
    ("The user switched to Postgres on Monday", "postgresql", None),
    ("The user went vegan in May 2026", "vegan", None),
    ("The user prefers to work in Python", "python", None),
    ("The user prefers tea over coffee", "tea", None),
    ("The user prefers PostgreSQL", "postgresql", None),
])
def test_context_in_content(content, value, qualifier):
    assert slots.context_in(content, value) == qualifier


def test_a_preference_takes_the_context_its_content_names_and_a_fact_does_not():
    """Given a model that files both scoped preferences under user.preferred_language
    Then the write path keys each by its context; a fact family is left as given (its
    "for ..." names the subject, not a context: "MySQL for the billing service")."""
    python = Candidate(content="The user prefers Python for scripting", kind="preference",
                       slot="user.preferred_language", value="python")
    rust = Candidate(content="The user prefers Rust for systems programming",
                     kind="preference", slot="user.preferred_language", value="rust")
    assert python.slot == "user.preferred_language@scripting"
    assert rust.slot == "user.preferred_language@system_programming"
    mysql = Candidate(content="The team decided to use MySQL for the billing service",
                      slot="project.database", value="mysql")
    assert mysql.slot == "project.database"
    plain = Candidate(content="The user prefers PostgreSQL", slot="user.preferred_database",
                      value="postgresql")
    assert plain.slot == "user.preferred_database"  # control: no context, no qualifier


def test_covers_and_distinct_facts():
    assert slots.covers("user.allergies", "user.allergies:peanut")
    assert slots.covers("user.allergies:peanut", "user.allergies:peanut")
    assert not slots.covers("user.allergies:peanut", "user.allergies:shellfish")
    assert slots.covers("user.preferred_drink", "user.preferred_drink@morning")
    assert not slots.covers("user.preferred_drink@work", "user.preferred_drink@morning")
    assert not slots.covers("user.allergies", "user.pets:rex")
    assert slots.distinct_facts("user.languages:french", "user.languages:spanish")
    assert slots.distinct_facts("user.preferred_language", "user.preferred_language@scripting")
    assert not slots.distinct_facts("user.location", "user.location")
    assert not slots.distinct_facts("user.location", "user.employer")


# -- generated ---------------------------------------------------------------------------

_WORDS = st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=9)
_PHRASES = st.lists(_WORDS, min_size=1, max_size=4).map(" ".join)
_ARTICLES = st.sampled_from(["", "the ", "my ", "a ", "for the ", "at ", "on ", "for my "])


@given(_ARTICLES, _PHRASES)
def test_qualifier_of_is_idempotent_and_ignores_framing(frame, phrase):
    """A normalised qualifier normalises to itself, and framing words ("for the", "at")
    or capitals do not make another one."""
    q = slots.qualifier_of(frame + phrase)
    assume(q is not None)
    assert slots.qualifier_of(q) == q
    assert slots.qualifier_of((frame + phrase).upper()) == q
    assert set(q) <= set(string.ascii_lowercase + "_")


@given(st.sampled_from(sorted(slots.MULTI_VALUED)), st.one_of(st.none(), _PHRASES),
       st.text(min_size=1, max_size=60))
def test_normal_is_idempotent(family, qualifier, value):
    slot = slots.key(family, qualifier=qualifier)
    once = slots.normal(slot, value)
    assert slots.normal(*once) == once
    if once[1] is not None:
        assert slots.parse(once[0])[2] == slots.value_part(value)


# ======================================================================================
# lexical: the normal form
# ======================================================================================

PARAPHRASES = [
    ("I'm allergic to peanuts", "I have a peanut allergy"),
    ("The user is allergic to peanuts", "The user has a peanut allergy"),
    ("I am allergic to peanuts", "I have peanut allergies"),
    ("I have 2 dogs", "I have two dogs"),
    ("I love hiking in the mountains", "I really love hiking in mountains"),
    ("My favourite colour is blue", "My favorite color is blue"),
    ("I prefer Postgres", "I prefer PostgreSQL"),
    ("I like hiking", "I like to hike"),
    ("I'm a vegetarian", "I am vegetarian"),
    ("For scripting I prefer Python", "I prefer Python for scripting"),
    ("The user's sister is called Ana", "Their sister is called Ana"),
    ("I have twenty-five plants", "I have 25 plants"),
    ("I don't drink coffee", "I do not drink coffee"),
    ("The deploy region is eu-west-1", "Deploy region: eu-west-1"),
]

NEAR_MISSES = [
    ("I use vim", "I use emacs"),
    ("I have a dog", "I have two dogs"),
    ("I live in Lisbon", "I lived in Lisbon"),
    ("I like tea", "I don't like tea"),
    ("I'm from Lisbon", "I'm in Lisbon"),
    ("I prefer C", "I prefer C++"),
    ("I'm a teacher", "I have a teacher"),
    ("I feel good", "I feel better"),
    ("I'm allergic to peanuts", "I'm allergic to walnuts"),
    ("I drink coffee every morning", "I no longer drink coffee every morning"),
    ("I use vim", "I used vim"),
    ("I have lived in Lisbon", "I lived in Lisbon"),
]


@pytest.mark.parametrize(("a", "b"), PARAPHRASES)
def test_paraphrases_share_a_normal_form(a, b):
    assert lexical.normal_form(a) == lexical.normal_form(b) != ""
    assert lexical.lexical_key(a) == lexical.lexical_key(b) is not None


@pytest.mark.parametrize(("a", "b"), NEAR_MISSES)
def test_near_misses_do_not(a, b):
    assert lexical.normal_form(a) != lexical.normal_form(b)
    assert lexical.normal_form(a) and lexical.normal_form(b)  # control: both have words


def test_normal_form_examples():
    assert lexical.normal_form("I'm allergic to peanuts") == "allergy have peanut"
    assert lexical.normal_form("I lived in Lisbon") == "in lisbon live ~past"
    assert lexical.normal_form("I have two hundred and five books") == "205 book have"
    assert lexical.normal_form("I am") == "" and lexical.lexical_key("I am") is None
    assert lexical.negated("I don't drink coffee any more")
    assert not lexical.negated("I drink coffee")  # control


def _dictionary_lemmas() -> set[str]:
    from simplemma.strategies.dictionaries.dictionary_factory import _load_dictionary_from_disk

    return {v.decode() for v in _load_dictionary_from_disk("en").values()}


def test_derivational_fold_merges_only_adjectives_with_their_nouns():
    """Given every lemma of the English dictionary
    When the -ic/-ical → -y rule and the British → American spelling rule run over it
    Then each fold maps a word to one of the same stem (allergic → allergy, colour →
    color), known distinct words stay apart (many/manic, specify/specific, classy/classic,
    polity/political, colony/colonic), and plain words are left alone."""
    lemmas = _dictionary_lemmas()
    folded = {w: lexical.derived_noun(w) for w in lemmas if w.islower() and w.isalpha()}
    merges = {w: n for w, n in folded.items() if n is not None}
    assert merges["allergic"] == "allergy" and merges["economic"] == "economy"
    assert merges["strategic"] == "strategy" and merges["historic"] == "history"
    for adjective, noun in merges.items():
        stem = adjective.removesuffix("al").removesuffix("ic")
        assert noun == stem + "y", (adjective, noun)
    for word in ("manic", "specific", "classic", "political", "colonic", "tonic", "logic",
                 "magic", "public", "music", "terrific", "pacific", "trophic"):
        assert word not in merges, word
    assert len(merges) < 400  # a rule for a family of learned words, not for the language
    # the spelling rule only ever swaps -our/-or, -ise/-ize, -yse/-yze, -tre/-ter
    spelled = {w: lexical.american(w) for w in folded}
    changed = {w: a for w, a in spelled.items() if a != w}
    assert changed["colour"] == "color" and changed["favourite"] == "favorite"
    assert changed["organise"] == "organize" and changed["centre"] == "center"
    for british, us in changed.items():
        assert any(p.match(british) and p.sub(r, british) == us
                   for p, r in lexical._SPELLING), (british, us)
    for word in ("four", "tour", "hour", "your", "sour", "scour", "timbre"):
        assert spelled.get(word, word) == word, word


# -- generated ---------------------------------------------------------------------------

STATEMENTS = [
    "the user has two dogs and a cat",
    "i am allergic to peanuts and shellfish",
    "the user prefers python for scripting at work",
    "i drink three cups of green tea every morning",
    "they live in lisbon with their sister",
    "the user does not eat meat on weekdays",
]
_NUMBERS = {"two": "2", "three": "3"}
CONTENT_WORDS = ["dogs", "cat", "peanuts", "shellfish", "python", "scripting", "work", "cups",
                 "tea", "morning", "lisbon", "sister", "meat", "weekdays", "emacs", "berlin",
                 "walnuts", "horses", "coffee", "rust", "evening", "brother", "fish", "home"]


@given(st.sampled_from(STATEMENTS), st.randoms(use_true_random=False), st.booleans(),
       st.booleans())
def test_word_order_case_and_number_spelling_do_not_change_the_normal_form(text, rnd, upper,
                                                                          digits):
    words = text.split()
    if digits:
        words = [_NUMBERS.get(w, w) for w in words]
    rnd.shuffle(words)
    other = " ".join(words)
    if upper:
        other = other.upper()
    assert lexical.normal_form(other) == lexical.normal_form(text)


@given(st.sampled_from(STATEMENTS), st.data())
def test_changing_one_content_word_changes_the_normal_form(text, data):
    words = text.split()
    at = data.draw(st.sampled_from([i for i, w in enumerate(words) if w in CONTENT_WORDS]))
    new = data.draw(st.sampled_from([w for w in CONTENT_WORDS if w not in words]))
    changed = " ".join(words[:at] + [new] + words[at + 1:])
    assert lexical.normal_form(changed) != lexical.normal_form(text)


# ======================================================================================
# the rule judge
# ======================================================================================


def neighbour(content: str, slot: str | None = None, value: str | None = None,
              **extra: Any) -> Neighbour:
    return Neighbour(id=uuid.uuid4(), content=content, kind="fact", slot=slot, value=value,
                     valid_from=NOW, recorded_at=NOW, similarity=0.5, **extra)


def relations(candidate: Candidate, shown: list[Neighbour], judge=None) -> dict[str, str]:
    by_id = {n.id: n.content for n in shown}
    return {by_id[v.target_id]: v.relation
            for v in judge_candidate(judge or RuleJudge(), candidate, shown)}


def test_rule_judge_calls_a_lexical_twin_a_duplicate_and_a_near_miss_nothing():
    twin = neighbour("The user has a peanut allergy")
    miss = neighbour("The user is allergic to walnuts")
    got = relations(Candidate(content="The user is allergic to peanuts"), [twin, miss])
    assert got == {"The user has a peanut allergy": "duplicate"}


def test_rule_judge_negation_of_the_same_statement_in_other_words_supersedes():
    held = neighbour("The user has a peanut allergy")
    other = neighbour("The user has a shellfish allergy")
    got = relations(Candidate(content="The user is no longer allergic to peanuts"), [held, other])
    assert got == {"The user has a peanut allergy": "supersedes"}


class _Replacing:
    """A judge that would make the candidate replace every neighbour it is shown."""

    name = "replacing"

    def __init__(self, relation: str) -> None:
        self.relation = relation

    def judge(self, candidate, neighbours):
        return [Verdict(target_id=n.id, relation=self.relation, confidence=0.99,
                        reason="model", decided_by="model") for n in neighbours]


@pytest.mark.parametrize("relation", ["supersedes", "contradicts", "duplicate"])
def test_no_judge_makes_a_distinct_fact_of_the_family_replace_another(relation):
    """Given a judge that says every neighbour is replaced
    Then another value of a multi-valued family, another context of a single-valued one,
    and an unqualified key beside a qualified one coexist; a neighbour of another family
    gets the judge's verdict (control)."""
    spanish = Candidate(content="The user speaks Spanish", slot="user.languages", value="spanish")
    french = neighbour("The user speaks French", "user.languages:french", "french")
    city = neighbour("The user lives in Madrid", "user.location", "madrid")
    got = relations(spanish, [french, city], _Replacing(relation))
    assert got == {"The user speaks French": "coexists", "The user lives in Madrid": relation}
    rust = Candidate(content="The user prefers Rust for systems programming",
                     slot="user.preferred_language", value="rust")
    python = neighbour("The user prefers Python for scripting",
                       "user.preferred_language@scripting", "python")
    general = neighbour("The user prefers Go", "user.preferred_language", "go")
    got = relations(rust, [python, general], _Replacing(relation))
    assert got == {python.content: "coexists", general.content: "coexists"}


def test_slot_rules_single_valued_supersede_multi_valued_duplicate_only_itself():
    lisbon = neighbour("The user lives in Lisbon", "user.location", "lisbon")
    got = relations(Candidate(content="The user lives in Porto", slot="user.location",
                              value="porto"), [lisbon])
    assert got == {lisbon.content: "supersedes"}
    peanut = neighbour("The user is allergic to peanuts", "user.allergies:peanut", "peanut")
    again = Candidate(content="The user has a peanut allergy", slot="user.allergies",
                      value="peanuts")
    assert relations(again, [peanut]) == {peanut.content: "duplicate"}


def test_a_negation_retires_only_the_value_it_names():
    """Given peanuts and shellfish under user.allergies
    When "no longer allergic to peanuts" arrives filed under the family (no value part) or
    under the value's key
    Then only peanuts is superseded."""
    peanut = neighbour("The user is allergic to peanuts", "user.allergies:peanut", "peanut")
    shellfish = neighbour("The user is allergic to shellfish", "user.allergies:shellfish",
                          "shellfish")
    for slot in ("user.allergies", "user.allergies:peanut", "user.allergies:peanuts"):
        negation = Candidate(content="The user is no longer allergic to peanuts", slot=slot,
                             asserts_change=True)
        assert negation.value is None
        assert relations(negation, [peanut, shellfish]) == {peanut.content: "supersedes"}, slot


# ======================================================================================
# the write path, end to end
# ======================================================================================


def create(client, headers, *items: dict) -> list[dict]:
    return create_ok(client, headers, *({"path": ALICE, **i} for i in items))


def rows(db, tenant_id, path: str = ALICE) -> list[dict]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT m.id, m.content, m.slot, m.value, m.status::text AS status,"
            " m.reinforcements, k.lexical_hash FROM memories m"
            " LEFT JOIN memory_lexical_keys k ON k.memory_id = m.id"
            " WHERE m.tenant_id = %s AND m.path = %s::ltree"
            " ORDER BY m.created_at, m.id", (tenant_id, path)).fetchall()


def active(db, tenant_id, path: str = ALICE) -> dict[str, dict]:
    return {r["content"]: r for r in rows(db, tenant_id, path) if r["status"] == "active"}


def direct_write(db, settings, tenant_id, *statements: dict, at: datetime | None = None):
    """``strata.write.apply.write`` with what an extractor produces: a content, a kind, a
    slot and value (None for a negation; else normalised, as the pipeline stages it),
    asserts_change; said at ``at``."""
    embedder = HashingEmbedder(settings.embedding_dim)
    vectors = embedder.embed([s["content"] for s in statements])
    at = at or datetime.now(UTC)
    items = []
    for i, (s, vec) in enumerate(zip(statements, vectors, strict=True)):
        canonical = canonicalize(s["content"])
        said = at + timedelta(microseconds=i)  # one batch, said in order
        items.append(persist.Staged(
            idx=i, path=s.get("path", ALICE), content=s["content"], canonical=canonical,
            value_hash=value_hash(canonical), kind=s.get("kind", "fact"), slot=s.get("slot"),
            value=normalise_value(s.get("value")), valid_from=said, confidence=0.9, evidence=[],
            embedding=vec, gate=None, verdicts=None, asserted_at=said,
            asserts_change=s.get("asserts_change", False)))
    with db.transaction(cause="test") as cur:
        return persist.write(cur, tenant_id=tenant_id, items=items, model=embedder.model,
                             recorded_at=at, thresholds=gating.bands(settings, embedder.model))


def test_http_multi_valued_values_all_stay_active(client, db, tenant):
    """Given French under user.languages (POST /v1/memories with slot and value)
    When Spanish and German arrive under the same family, one per request
    Then all three are active under their own keys, none superseded; French again
    reinforces (control: the family still recognises a repeat)."""
    h = tenant.headers
    for lang in ("French", "Spanish", "German"):
        [r] = create(client, h, {"content": f"I speak {lang}", "slot": "user.languages",
                                 "value": lang})
        assert r["status"] == "inserted", r
    now = active(db, tenant.tenant_id)
    assert {r["slot"] for r in now.values()} == {
        "user.languages:french", "user.languages:spanish", "user.languages:german"}
    assert all(r["status"] == "active" for r in rows(db, tenant.tenant_id))
    [again] = create(client, h, {"content": "The user speaks French", "slot": "user.languages",
                                 "value": "french"})
    assert again["status"] == "reinforced", again


def test_http_single_valued_last_value_stands(client, db, tenant):
    h = tenant.headers
    create(client, h, {"content": "I live in Lisbon", "slot": "user.location", "value": "lisbon"})
    [r] = create(client, h, {"content": "I live in Porto", "slot": "user.location",
                             "value": "porto"})
    assert r["status"] == "superseded_existing", r
    assert [r["content"] for r in active(db, tenant.tenant_id).values()] == ["I live in Porto"]


def test_http_preferences_in_different_contexts_coexist(client, db, tenant):
    """Given "I prefer Python for scripting" under user.preferred_language
    When "I prefer Rust for systems programming" arrives under the same slot
    Then both are active (keyed by context); "I prefer Ruby for scripting" then supersedes
    Python only (control: the same context still takes one value)."""
    h = tenant.headers
    create(client, h, {"content": "I prefer Python for scripting",
                       "slot": "user.preferred_language", "value": "python"})
    [rust] = create(client, h, {"content": "I prefer Rust for systems programming",
                                "slot": "user.preferred_language", "value": "rust"})
    assert rust["status"] == "inserted", rust
    assert set(active(db, tenant.tenant_id)) == {
        "I prefer Python for scripting", "I prefer Rust for systems programming"}
    [ruby] = create(client, h, {"content": "I prefer Ruby for scripting",
                                "slot": "user.preferred_language", "value": "ruby"})
    assert ruby["status"] == "superseded_existing", ruby
    now = active(db, tenant.tenant_id)
    assert set(now) == {"I prefer Ruby for scripting", "I prefer Rust for systems programming"}
    assert now["I prefer Ruby for scripting"]["slot"] == "user.preferred_language@scripting"


def test_http_explicit_qualified_keys_and_the_unqualified_one_coexist(client, db, tenant):
    """An unqualified preference does not retire a scoped one, nor the reverse."""
    h = tenant.headers
    create(client, h, {"content": "Editor of choice: vim", "slot": "user.preferred_editor@work",
                       "value": "vim"})
    [r] = create(client, h, {"content": "Editor of choice: emacs",
                             "slot": "user.preferred_editor", "value": "emacs"})
    assert r["status"] == "inserted", r
    [r] = create(client, h, {"content": "Editor of choice at home: helix",
                             "slot": "user.preferred_editor@at home", "value": "helix"})
    assert r["status"] == "inserted", r
    assert {m["slot"] for m in active(db, tenant.tenant_id).values()} == {
        "user.preferred_editor@work", "user.preferred_editor", "user.preferred_editor@home"}
    [r] = create(client, h, {"content": "Editor of choice: zed", "slot": "user.preferred_editor",
                             "value": "zed"})
    assert r["status"] == "superseded_existing", r  # control: the same key still supersedes


def test_http_lexical_twin_is_one_memory_even_far_apart_in_vector_space(client, db, tenant,
                                                                       embedder):
    """Given "I'm allergic to peanuts" (no slot) among other memories
    When "I have a peanut allergy" is written (hashing embedder: similarity 0.25, below the
    judge band)
    Then it reinforces the first; "I'm allergic to walnuts" is a memory of its own
    (control)."""
    a, b = embedder.embed(["I'm allergic to peanuts", "I have a peanut allergy"])
    assert sum(x * y for x, y in zip(a, b)) < gating.BANDS["strata-hash-v1"][1]
    h = tenant.headers
    create(client, h, {"content": "I'm allergic to peanuts"}, {"content": "I live in Lisbon"},
           {"content": "I have a dog named Rex"})
    [r] = create(client, h, {"content": "I have a peanut allergy"})
    assert r["status"] == "reinforced", r
    [r] = create(client, h, {"content": "I'm allergic to walnuts"})
    assert r["status"] == "inserted", r
    now = active(db, tenant.tenant_id)
    assert now["I'm allergic to peanuts"]["reinforcements"] == 1
    assert "I have a peanut allergy" not in now and "I'm allergic to walnuts" in now
    assert all(r["lexical_hash"] is not None for r in now.values())


@pytest.mark.parametrize(("first", "second"), [
    ("I use vim", "I use emacs"),
    ("I have a dog", "I have two dogs"),
    ("I live in Lisbon", "I lived in Lisbon"),
    ("I like tea", "I don't like tea"),
])
def test_http_near_misses_stay_two_memories(client, db, tenant, first, second):
    h = tenant.headers
    create(client, h, {"content": first})
    [r] = create(client, h, {"content": second})
    assert r["status"] != "reinforced", r
    statuses = {m["content"]: m["status"] for m in rows(db, tenant.tenant_id)}
    assert set(statuses) == {first, second}, statuses
    assert statuses[second] == "active"
    [again] = create(client, h, {"content": first + "!"})  # control: a repeat reinforces
    assert again["status"] == "reinforced" or statuses[first] != "active", again


def test_http_lexical_twins_in_one_request_are_one_memory(client, db, tenant):
    h = tenant.headers
    results = create(client, h, {"content": "I'm allergic to peanuts"},
                     {"content": "I have a peanut allergy"}, {"content": "I have a dog"})
    assert [r["status"] for r in results] == ["inserted", "reinforced", "inserted"], results
    assert results[1]["id"] == results[0]["id"]


def test_negation_of_a_multi_valued_value_retires_only_it(db, settings, tenant):
    """Given peanuts and shellfish under user.allergies (written by the write path)
    When "no longer allergic to peanuts" arrives as an extractor gives it (the family, no
    value), and later "no longer allergic to shellfish" the same way
    Then each retires only the value it names, and each negation is stored (neither takes
    the other's place)."""
    t = tenant.tenant_id
    out = direct_write(db, settings, t,
                       {"content": "The user is allergic to peanuts", "slot": "user.allergies",
                        "value": "peanuts"},
                       {"content": "The user is allergic to shellfish", "slot": "user.allergies",
                        "value": "shellfish"}, at=NOW)
    assert [o.outcome for o in out] == ["created", "created"]
    [neg] = direct_write(db, settings, t, {
        "content": "The user is no longer allergic to peanuts", "slot": "user.allergies",
        "asserts_change": True}, at=NOW + timedelta(days=1))
    assert neg.outcome == "superseded_existing", neg
    status = {r["content"]: r["status"] for r in rows(db, t)}
    assert status["The user is allergic to peanuts"] == "superseded"
    assert status["The user is allergic to shellfish"] == "active"
    [neg2] = direct_write(db, settings, t, {
        "content": "The user is no longer allergic to shellfish", "slot": "user.allergies",
        "asserts_change": True}, at=NOW + timedelta(days=2))
    assert neg2.outcome == "superseded_existing", neg2
    status = {r["content"]: r["status"] for r in rows(db, t)}
    assert status["The user is allergic to shellfish"] == "superseded"
    assert status["The user is no longer allergic to peanuts"] == "active"
    assert status["The user is no longer allergic to shellfish"] == "active"


def test_unqualified_change_replaces_the_only_context_but_not_one_of_several(db, settings,
                                                                            tenant):
    """Given one scoped decision ("MySQL for the billing service")
    When an unqualified change arrives ("switching back to Postgres", asserts_change)
    Then it supersedes that decision: the change is about the one context there is. Given
    two contexts, an unqualified change supersedes neither (control)."""
    t = tenant.tenant_id
    direct_write(db, settings, t, {"content": "The team uses MySQL for the billing service",
                                   "slot": "team.database@billing_service", "value": "mysql"},
                 at=NOW)
    [o] = direct_write(db, settings, t, {
        "content": "The project is switching back to PostgreSQL", "slot": "team.database",
        "value": "postgresql", "asserts_change": True}, at=NOW + timedelta(days=1))
    assert o.outcome == "superseded_existing", o
    status = {r["content"]: r["status"] for r in rows(db, t)}
    assert status["The team uses MySQL for the billing service"] == "superseded"
    direct_write(db, settings, t,
                 {"content": "The user prefers Python for scripting",
                  "slot": "user.preferred_language", "value": "python"},
                 {"content": "The user prefers Rust for systems programming",
                  "slot": "user.preferred_language", "value": "rust"}, at=NOW)
    [o] = direct_write(db, settings, t, {
        "content": "The user has switched to Go", "slot": "user.preferred_language",
        "value": "go", "asserts_change": True}, at=NOW + timedelta(days=1))
    assert o.outcome == "created", o
    now = active(db, t)
    assert {"The user prefers Python for scripting", "The user prefers Rust for systems programming",
            "The user has switched to Go"} <= set(now)


# -- generated, through the write path ------------------------------------------------------

_VALUES = st.lists(st.sampled_from(["french", "spanish", "german", "italian", "japanese",
                                    "dutch", "polish", "greek"]), min_size=1, max_size=6,
                   unique=True)
_FAMILIES = st.sampled_from(sorted(slots.MULTI_VALUED))


@hsettings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(family=_FAMILIES, values=_VALUES, batched=st.booleans(), data=st.data())
def test_generated_multi_valued_values_all_stay_active(db, settings, make_tenant, family,
                                                       values, batched, data):
    """For a random multi-valued family and a random set of values written in random order,
    in one batch or one write each, every value is active under its own key and nothing is
    superseded; writing one again reinforces (control)."""
    t = make_tenant().tenant_id
    order = data.draw(st.permutations(values))
    statements = [{"content": f"The user has {v} in {family}", "slot": family, "value": v}
                  for v in order]
    if batched:
        out = direct_write(db, settings, t, *statements)
    else:
        out = [o for s in statements for o in direct_write(db, settings, t, s)]
    assert [o.outcome for o in out] == ["created"] * len(values), out
    got = rows(db, t)
    assert {r["slot"] for r in got if r["status"] == "active"} == {
        slots.key(family, value=v) for v in values}
    assert all(r["status"] == "active" for r in got)
    [again] = direct_write(db, settings, t, statements[0])
    assert again.outcome == "reinforced", again


@hsettings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.sampled_from(["berlin", "paris", "lisbon", "porto", "oslo", "rome"]),
                       min_size=2, max_size=6, unique=True),
       batched=st.booleans())
def test_generated_single_valued_last_value_stands(db, settings, make_tenant, values, batched):
    """For a random sequence of values of one single-valued slot, in one batch or one write
    each, the last one said is the one active holder; every other value is superseded (a
    value coming back would be blocked by its tombstone: test_write_path covers that)."""
    t = make_tenant().tenant_id
    statements = [{"content": f"The user lives in {v}", "slot": "user.location", "value": v}
                  for v in values]
    if batched:
        direct_write(db, settings, t, *statements)
    else:
        for i, s in enumerate(statements):
            direct_write(db, settings, t, s, at=NOW + timedelta(minutes=i))
    got = rows(db, t)
    holders = [r for r in got if r["status"] == "active" and r["slot"] == "user.location"]
    assert [h["value"] for h in holders] == [values[-1]], got
    assert {r["value"] for r in got if r["status"] == "superseded"} == set(values) - {values[-1]}


@hsettings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contexts=st.lists(st.sampled_from(["scripting", "work", "weekends", "the new platform",
                                          "data science", "home", "mobile apps"]),
                         min_size=2, max_size=5, unique=True),
       values=st.lists(st.sampled_from(["python", "rust", "go", "ruby", "java"]), min_size=5,
                       max_size=5))
def test_generated_qualifiers_keep_values_apart(db, settings, make_tenant, contexts, values):
    """For random contexts, each given its own value under one preference family (the
    qualifier named in the slot), every context keeps its value; a second value in the
    first context supersedes only that context's (control)."""
    t = make_tenant().tenant_id
    statements = [{"content": f"The user prefers {v} (context: {c})", "kind": "preference",
                   "slot": slots.key("user.preferred_language", qualifier=f"for {c}"),
                   "value": v} for c, v in zip(contexts, values)]
    for i, s in enumerate(statements):
        direct_write(db, settings, t, s, at=NOW + timedelta(minutes=i))
    held = {r["slot"]: r["value"] for r in rows(db, t) if r["status"] == "active"}
    assert held == {s["slot"]: s["value"] for s in statements}
    replacement = "kotlin"
    [o] = direct_write(db, settings, t, {**statements[0], "value": replacement,
                                         "content": f"The user prefers {replacement}"},
                       at=NOW + timedelta(hours=1))
    assert o.outcome == "superseded_existing", o
    held = {r["slot"]: r["value"] for r in rows(db, t) if r["status"] == "active"}
    assert held == {**{s["slot"]: s["value"] for s in statements},
                    statements[0]["slot"]: replacement}


def test_ingest_lexical_twin_reinforces_and_another_allergy_is_kept(client, db, tenant):
    """Given "I'm allergic to peanuts" ingested (POST /v1/ingest, rule extractor)
    When "I have a peanut allergy" is ingested the next day
    Then it reinforces (or merges into) the one peanut memory; "I'm allergic to shellfish"
    then is a second active memory (control)."""
    def say(text: str, day: int) -> dict:
        r = client.post("/v1/ingest", headers=tenant.headers, json={
            "path": ALICE, "wait": True,
            "messages": [{"role": "user", "content": text,
                          "at": (NOW + timedelta(days=day)).isoformat()}]})
        assert r.status_code == 200, r.text
        return r.json()

    say("I'm allergic to peanuts", 0)
    again = say("I have a peanut allergy", 1)
    assert [i["outcome"] for i in again["items"]] in (["reinforced"], ["merged"]), again
    say("I'm allergic to shellfish", 2)
    now = active(db, tenant.tenant_id)
    assert len([c for c in now if "peanut" in c.lower()]) == 1, now
    assert len([c for c in now if "shellfish" in c.lower()]) == 1, now


def test_import_keys_a_legacy_multi_valued_slot_and_finds_lexical_twins(db, settings, tenant,
                                                                       embedder):
    """Given records of an older export: French and Spanish both under the unkeyed slot
    user.languages, and a slotless "I have a peanut allergy"
    When they are imported into a store holding "I'm allergic to peanuts"
    Then both languages are inserted under their own keys (neither held for review as a
    second holder of one slot), and the allergy reinforces the stored twin."""
    from psycopg.types.json import Jsonb
    from psycopg.types.range import Range

    from strata.write import imports

    t = tenant.tenant_id
    direct_write(db, settings, t, {"content": "I'm allergic to peanuts"}, at=NOW)

    def record(content: str, slot: str | None, value: str | None) -> imports.Incoming:
        canonical = canonicalize(content)
        return imports.Incoming(row={
            "id": uuid.uuid4(), "tenant": t, "path": ALICE, "name": None, "content": content,
            "context": None,
            "canonical": canonical, "hash": value_hash(canonical), "kind": "fact",
            "slot": slot, "value": value, "status": "active", "origin": "user_stated",
            "importance": 0.5, "confidence": 0.9, "pinned": False, "access_count": 0,
            "last_accessed_at": None, "reinforcements": 0, "tier": "long_term",
            "expires_at": None, "valid": Range(NOW, None, "[)"), "recorded_at": NOW,
            "asserted_at": NOW, "embedding": embedder.embed([content])[0],
            "model": embedder.model, "version": 1, "evidence": Jsonb([]), "meta": Jsonb({}),
            "tags": [], "created_at": NOW, "updated_at": NOW,
        }, embedding=embedder.embed([content])[0])

    items = [record("The user speaks French", "user.languages", "french"),
             record("The user speaks Spanish", "user.languages", "spanish"),
             record("I have a peanut allergy", None, None)]
    with db.transaction(cause="test") as cur:
        decisions = imports.write(cur, t, items, gating.bands(settings, embedder.model), set())
    assert [d.action for d in decisions] == ["inserted", "inserted", "reinforced"], decisions
    now = active(db, t)
    assert now["The user speaks French"]["slot"] == "user.languages:french"
    assert now["The user speaks Spanish"]["slot"] == "user.languages:spanish"
    assert now["I'm allergic to peanuts"]["reinforcements"] == 1
    assert "I have a peanut allergy" not in now


def test_a_value_retired_from_the_general_key_stays_retired_in_a_context(db, settings, tenant):
    """Given MongoDB superseded by PostgreSQL as the user's database (the general key)
    When MongoDB comes back scoped ("likes Mongo for backends")
    Then it is blocked by MongoDB's tombstone. Given Python retired for scripting only, Python
    for data science is a new fact (control: a context's tombstone leaves the others)."""
    t = tenant.tenant_id
    pref = {"kind": "preference", "slot": "user.preferred_database"}
    direct_write(db, settings, t, {**pref, "content": "The user prefers MongoDB",
                                   "value": "mongodb"}, at=NOW)
    [o] = direct_write(db, settings, t, {**pref, "content": "The user switched to PostgreSQL",
                                         "value": "postgresql", "asserts_change": True},
                       at=NOW + timedelta(days=1))
    assert o.outcome == "superseded_existing", o
    [o] = direct_write(db, settings, t, {**pref, "content": "The user likes Mongo for backends",
                                         "value": "Mongo"}, at=NOW + timedelta(days=2))
    assert o.outcome == "blocked", o
    lang = {"kind": "preference", "slot": "user.preferred_language"}
    direct_write(db, settings, t, {**lang, "content": "The user prefers Python for scripting",
                                   "value": "python"}, at=NOW)
    [o] = direct_write(db, settings, t, {**lang, "content": "The user prefers Ruby for scripting",
                                         "value": "ruby"}, at=NOW + timedelta(days=1))
    assert o.outcome == "superseded_existing", o
    [o] = direct_write(db, settings, t, {
        **lang, "content": "The user prefers Python for data science", "value": "python"},
        at=NOW + timedelta(days=2))
    assert o.outcome == "created", o
    assert set(active(db, t)) == {"The user switched to PostgreSQL",
                                  "The user prefers Ruby for scripting",
                                  "The user prefers Python for data science"}
