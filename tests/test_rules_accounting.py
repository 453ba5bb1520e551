"""The rule extractor accounts for every user clause: each one becomes a candidate or a
``NotKept`` with its reason, a secret never survives anywhere, and a speaker's name replaces
"the user". Messages are generated from clause families (hypothesis), so no listed sentence
decides the outcome; each exclusion sits beside statements that must still come out.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from strata.ingest.models import Message
from strata.ingest.rules import RuleExtractor, read_message
from strata.ingest.rules.text import clauses, clean, sentences

NOW = datetime(2026, 5, 13, 15, 0, tzinfo=UTC)

PLACES = ["Lisbon", "Porto", "Berlin", "Osaka", "Denver", "Leeds", "Quito"]
ORGS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries"]
THINGS = ["pottery", "the violin", "rock climbing", "sourdough baking", "chess", "Spanish"]
NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Priya", "Tomás"]

# (template, what it must come out as: "kept" or a reason)
STATEMENTS = [
    ("I live in {place}", "kept"),
    ("I work at {org}", "kept"),
    ("I've been learning {thing} since spring", "kept"),
    ("my sister just moved to {place}", "kept"),
    ("I started a new job at {org}", "kept"),
    ("I signed up for a {thing} class last week", "kept"),
]
EXCLUDED = [
    ("do you think I should move to {place}?", "question"),
    ("what if I quit {org} tomorrow?", "question"),
    ("if I ever move to {place} I'd take up {thing}", "hypothetical"),
    ("should I try {thing}?", "question"),
    ("my boss said I should learn {thing}", "reported"),
    ("thanks so much, that's great", "small_talk"),
    ("I'm so happy for you", "small_talk"),
]
SECRETS = [
    "the wifi password is {secret}",
    "my PIN is 4417 so don't forget it",
    "here's my card 4111 1111 1111 1111",
    "remember that our alarm code is {secret}",
]
# Password-like values (a word is not one: "the password is unchanged" names no secret).
SECRET_VALUES = st.from_regex(r"[a-z]{3,8}[0-9]{2,4}[a-z!#]{0,3}", fullmatch=True)


def fill(template: str, data) -> str:
    return template.format(place=data.draw(st.sampled_from(PLACES)),
                           org=data.draw(st.sampled_from(ORGS)),
                           thing=data.draw(st.sampled_from(THINGS)),
                           secret=data.draw(SECRET_VALUES))


def units(text: str) -> list[str]:
    return [c for s in sentences(clean(text)) for c in clauses(s)]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.data())
def test_every_clause_is_kept_or_accounted_for_with_its_reason(data):
    parts = data.draw(st.lists(st.sampled_from(STATEMENTS + EXCLUDED), min_size=2, max_size=6))
    parts.append(data.draw(st.sampled_from(STATEMENTS)))  # the control: a statement
    said = [(fill(t, data), expected) for t, expected in parts]
    text = " ".join(s[0].upper() + s[1:] + ("" if s.endswith("?") else ".") for s, _ in said)

    out = read_message(text, NOW, index=3)

    assert out.memories, text  # the control statement at least
    assert all(c.evidence == [3] for c in out.memories)
    assert all(n.message == 3 for n in out.not_kept)
    # Every unit of the message is a candidate or a not-kept entry: nothing vanishes.
    assert len(out.memories) + len(out.not_kept) >= len(units(text)) - len(
        [u for u in units(text) if not u.strip(" .!?")])
    reasons = [n.reason for n in out.not_kept]
    for clause, expected in said:
        if expected == "kept":
            continue
        assert expected in reasons, (clause, reasons)
        assert any(n.text and clause.rstrip("?.").lower() in n.text.lower()
                   for n in out.not_kept), (clause, out.not_kept)
    kept = {clause for clause, expected in said if expected == "kept"}
    assert len(out.memories) >= len(kept), ([c.content for c in out.memories], said)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.data())
def test_a_secret_survives_nowhere(data):
    secret_text = fill(data.draw(st.sampled_from(SECRETS)), data)
    place = data.draw(st.sampled_from(PLACES))
    text = f"I live in {place}. {secret_text[0].upper() + secret_text[1:]}."

    out = read_message(text, NOW)

    [memory] = out.memories  # the control
    assert place in memory.content
    [withheld] = [n for n in out.not_kept if n.reason == "secret"]
    assert withheld.text is None
    dump = out.model_dump_json()
    for token in secret_text.split():
        if len(token) >= 6 or token.isdigit():
            assert token not in dump, token


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.sampled_from(NAMES), st.sampled_from(PLACES), st.sampled_from(THINGS))
def test_a_named_speakers_memories_name_them(name, place, thing):
    messages = [
        Message(role="user", name=name, content=f"I moved to {place} in March."),
        Message(role="assistant", name="Sam", content=f"I live in {place} too. Do you like it?"),
        Message(role="user", name=name, content=f"Yesterday I tried {thing} for the first time."),
        Message(role="user", content="I prefer tea."),
    ]
    out = RuleExtractor().extract(messages, NOW)

    by_message = {c.evidence[0]: c for c in out.memories}
    assert set(by_message) == {0, 2, 3}  # the assistant's words are not the user's
    assert by_message[0].content.startswith(name)
    assert "the user" not in by_message[0].content.lower()
    assert by_message[2].content.startswith(name) and "2026-05-12" in by_message[2].content
    # Control: a message with no name keeps "the user".
    assert by_message[3].content == "The user prefers tea"


def test_multi_valued_facts_key_each_value_and_paraphrases_meet():
    allergic = read_message("I'm allergic to peanuts", NOW).memories[0]
    allergy = read_message("I have a peanut allergy", NOW).memories[0]
    shellfish = read_message("I'm allergic to shellfish", NOW).memories[0]
    assert allergic.slot == allergy.slot == "user.allergies:peanut"
    assert shellfish.slot == "user.allergies:shellfish"  # control: another allergen, another key
    french, spanish = (read_message(f"I speak {lang}", NOW).memories[0]
                       for lang in ("French", "Spanish"))
    assert french.slot != spanish.slot
    assert {french.value, spanish.value} == {"french", "spanish"}


EDITORS = ["vim", "Emacs", "VS Code", "Sublime", "Helix", "nano"]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.sampled_from(PLACES), st.sampled_from(PLACES), st.sampled_from(EDITORS),
       st.sampled_from(EDITORS), st.sampled_from(["actually it's {x}, not {y}", "no, {x}",
                                                  "sorry, I meant {x}", "actually, {x}"]))
def test_a_short_correction_replaces_the_value_of_the_last_statement_of_its_kind(
        home, other, editor, other_editor, form):
    """A short correction replaces the value of the last slotted statement when it names a
    value of that slot's kind, and leaves it alone when it names something else."""
    if home == other or editor.lower() == other_editor.lower():
        return
    def said(*texts: tuple[str, str]):
        return RuleExtractor().extract([Message(role=r, content=t) for r, t in texts], NOW)

    moved = said(("user", f"I live in {home}"), ("user", form.format(x=other, y=home)))
    [first, fixed] = moved.memories
    assert (fixed.slot, fixed.value, fixed.asserts_change) == (
        "user.location", other.lower(), True)
    assert other in fixed.content and home not in fixed.content
    # Control: an editor is no city — the correction of a home by one is not kept as a home.
    odd = said(("user", f"I live in {home}"), ("user", form.format(x=other_editor, y=home)))
    assert [c.slot for c in odd.memories] == ["user.location"]
    # The assistant's claim is what a bare answer corrects; the claim itself is not kept.
    answered = said(("assistant", f"You use {editor}, right?"),
                    ("user", form.format(x=other_editor, y=editor)))
    [answer] = answered.memories
    assert answer.slot == "user.preferred_editor" and answer.asserts_change
    assert answer.evidence == [1]


def test_a_message_with_no_sentence_in_it_is_accounted_for_too():
    """An emoji or a code block alone is no statement, and the receipt says so (control: the
    message after it is kept)."""
    out = RuleExtractor().extract([
        Message(role="user", content="👍🎉"),
        Message(role="user", content="```\nI prefer MongoDB\n```"),
        Message(role="user", content="I prefer tea"),
    ], NOW)
    assert [(n.message, n.reason) for n in out.not_kept] == [(0, "no_statement"),
                                                             (1, "no_statement")]
    [tea] = out.memories
    assert tea.evidence == [2] and tea.value == "tea"
