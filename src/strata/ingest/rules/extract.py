"""The rule extractor: each user clause through the screen, then the statement families in
order (``FAMILIES``); the first family whose pattern matches and whose handler accepts makes
the candidate. Every clause ends as a candidate or as a ``NotKept`` with its reason."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from strata.ingest.dates import DateMatch, find_date, guess_tense, render
from strata.ingest.models import Candidate, Extraction, Message, NotKept
from strata.ingest.rules import (
    answers, attributes, belongings, corrections, decisions, ends, health, identity,
    negations, people, plans, preferences, referents, statements,
)
from strata.ingest.rules.base import A, I, Handler, Result, rx, snake
from strata.ingest.rules.identity import IN_PLACE, LIVED_IN, here_in
from strata.ingest.rules.instructions import instruction, instruction_slot
from strata.ingest.rules.person import named, speaker_slot, speaker_value, third_person
from strata.ingest.rules.screen import about_speaker, screen, subject_dropped
from strata.ingest.rules.text import (
    CONDITIONAL, FIRST_PERSON, HYPOTHETICAL_START, QUESTION_START, REPORTED, Lead, clauses,
    clean, expand, list_items,
    remove_date, sentences, squash, strip_leads, told_as_over,
)
from strata.rules import secrets
from strata.write.canonical import canonicalize
from strata.write.values import _EDGE, normalize_value

# The statement families, in the order they are tried. To add a kind of statement, write a
# module with a PATTERNS list of (pattern, handler) and put it here, before any family whose
# patterns would take its clauses.
FAMILIES: list[tuple[re.Pattern[str], Handler]] = [
    *negations.PATTERNS,
    *ends.PATTERNS,
    *attributes.EARLY,
    *preferences.CHANGES,
    *identity.PATTERNS,
    *attributes.ALL,
    *health.PATTERNS,
    *belongings.PATTERNS,
    *preferences.PATTERNS,
    *people.PATTERNS,
    *decisions.PATTERNS,
    *identity.MY_X_IS_Y,
]

_HABIT = rx(I, r"(?:", A, r")?(?:always|never|usually|often|normally|typically|rarely)",
            r"\s+\w+\s+\w+")
_ANNUAL = frozenset({"birthday", "anniversary", "wedding_anniversary", "name_day", "birth_date",
                     "date_of_birth"})
_MY_X_IS = rx(r"^(?:my|(?P<who>(?-i:[A-Z][\w-]+))'s)\s+",
              r"(?P<x>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}?)\s+(?:is|are|was)\s+(?P<y>.+)$")
_SMALL_TALK_EVENT = rx(r"^i\s+(?:am|was|feel|felt)\s+(?:\w+\s+)?\w+$")
_MAX_CLAUSE = 400
_NOT_KEPT_TEXT = 300


class RuleExtractor:
    """Candidates from user messages by pattern; see ``strata.ingest.rules`` for the
    conventions."""

    name = "rule"

    def extract(self, messages: list[Message], now: datetime,
                stored: Sequence[Candidate] = ()) -> Extraction:
        """``stored``: what earlier sessions keep of the scope (slotted memories, oldest
        first), which a correction of something not said here may put right."""
        now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
        out = Extraction()
        thread = Thread(stored=list(stored))
        for index, message in enumerate(messages):
            if message.role == "assistant":
                # Never a fact about the user, but what a short answer ("no, Lyon") corrects,
                # and the question a fragment ("boulder") answers.
                thread.antecedent = _claim(message.content, message.at or now) or (
                    thread.antecedent)
                thread.frames = answers.frames(message.content, thread.told)
                continue
            if message.role != "user":
                continue
            said = read_message(message.content, message.at or now, index, message.name, thread)
            thread.kept.extend(said.memories)
            out.not_kept.extend(said.not_kept)
            thread.said, thread.frames = message.content, []
            thread.told = f"{thread.told} {message.content}".strip()
        out.memories = thread.kept
        return out


@dataclass
class Thread:
    """What a conversation carries from one clause to the next: the last slotted statement,
    which a short correction ("actually it's Porto, not Lisbon", "no, Lyon") replaces."""

    antecedent: Result | None = None
    # The questions of the assistant's last message (``answers.frames``), which the user's
    # next message may answer in fragments; and what the user said last, for the "she" or
    # "the boys" of such a question.
    frames: list[answers.Frame] = field(default_factory=list)
    said: str = ""
    told: str = ""  # everything the user said in the conversation, for "What breed?"
    # The candidates of the conversation's earlier messages, which a correction ("*Venice",
    # "scratch that, it's 10 mg") fixes in place.
    kept: list[Candidate] = field(default_factory=list)
    # What earlier sessions stored, which a correction finding nothing here puts right
    # ("I gave you the wrong date before -- it's May 21st").
    stored: list[Candidate] = field(default_factory=list)


_TAG_QUESTION = re.compile(r"[,\s]*(?:right|correct|yes|no|isn't\s+it|aren't\s+you|don't\s+you|"
                           r"didn't\s+you|is\s+that\s+right|yeah)?\s*\?*$", re.I)
_YOU = [(re.compile(r"^you're\b|^you\s+are\b", re.I), "I am"),
        (re.compile(r"^you've\b|^you\s+have\b", re.I), "I have"),
        (re.compile(r"^you\b", re.I), "I"), (re.compile(r"^your\b", re.I), "my")]


def _claim(text: str, at: datetime) -> Result | None:
    """The last slotted statement an assistant makes about the user ("You live in Paris,
    right?" -> user.location = paris), read as the user's own words."""
    found = None
    for sentence in sentences(clean(text)):
        said = _TAG_QUESTION.sub("", sentence).strip()
        if not re.match(r"^you(?:r|'re|'ve)?\b", said, re.I):
            continue
        for pattern, mine in _YOU:
            said = pattern.sub(mine, said, count=1)
        said = re.sub(r"\byour\b", "my", said, flags=re.I)
        result = _clause(said, at, False)
        if isinstance(result, Result) and result.slot and result.value:
            found = result
    return found


def extract_message(text: str, at: datetime, index: int = 0,
                    name: str | None = None) -> list[Candidate]:
    """Candidates from one user message written at ``at``."""
    return read_message(text, at, index, name).memories


@dataclass
class _Reading:
    memories: list[Candidate] = field(default_factory=list)
    not_kept: list[NotKept] = field(default_factory=list)


def read_message(text: str, at: datetime, index: int = 0, name: str | None = None,
                 thread: Thread | None = None) -> Extraction:
    """One user message written at ``at``: its candidates, and why each other clause was not
    kept. ``thread`` carries the conversation's last slotted statement across messages."""
    at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    thread = thread if thread is not None else Thread()
    out = _Reading()
    seen: set[tuple] = set()
    carry_change = False
    fragments: list[str] = []  # clauses that say nothing alone: answers, when a question asked

    def skip(reason: str, clause: str | None) -> None:
        out.not_kept.append(NotKept(message=index, reason=reason,
                                    text=None if clause is None else clause[:_NOT_KEPT_TEXT]))

    last_sentence: list[str] = []  # what the sentence at hand made, which a "jk" takes back
    # What the user said, clause by clause, from their previous message on: that message
    # ends a sentence ("my manager is Karen" is not the start of this message's sentence,
    # whose "he" is the person this one names first).
    said_last = re.sub(r"(?<=[^\s.!?])\s*$", ".", thread.said) if thread.said.strip() else ""
    heard: list[str] = [said_last]
    before = [said_last]  # what they said before the clause at hand

    def keep(found: Result, clause: str) -> None:
        for one in (found, *found.also):
            # "it's pretty much all I drink": "it" is what the user just named. With nothing
            # named, the statement is kept as said: in a long conversation the referent is
            # often the other speaker's, and the turn still says something of the speaker.
            content = one.content
            if referents.opens_with_pronoun(strip_leads(clause).text):
                content = referents.resolve(content, before[0]) or content
            candidate = Candidate(
                content=named(content, name)[:4000], kind=one.kind,
                slot=speaker_slot(one.slot, name),
                value=speaker_value(one.value, name), valid_from=one.valid_from,
                valid_to=one.valid_to,
                confidence=round(min(max(one.confidence, 0.0), 1.0), 2),
                asserts_change=one.change, evidence=[index],
            )
            key = (candidate.kind, candidate.slot, candidate.value,
                   canonicalize(candidate.content))
            if key in seen:
                skip("duplicate", clause)
            else:
                seen.add(key)
                out.memories.append(candidate)
                last_sentence.append(candidate.content)

    def asked_about(question: str) -> None:
        """A question is not kept; the devices it takes for granted the user has are."""
        skip("question", question)
        for owned in attributes.owned_in_question(question):
            keep(Result(owned.content, owned.kind, owned.slot, owned.value, owned.confidence,
                        valid_from=at), question)

    def said() -> Iterator[str]:
        """The message's sentences, each question cut to what it says before it asks, and a
        joke's marker ending its sentence ("... (kidding) real talk: ...")."""
        marked = _JOKING.sub(lambda m: m.group() + ".", clean(text))
        for sentence in sentences(_TWO_DOTS.sub(".", marked)):
            if secrets.contains_secret(sentence):
                # The whole sentence: a clause split could leave the secret's label in one
                # part.
                skip("secret", None)
            elif re.search(r"\?[?!]*$", sentence.rstrip()):  # "really?!" asks too
                told, asked = asked_after(sentence)
                if asked:
                    asked_about(asked)
                yield from sentences(told)
                if asked:
                    heard.append(asked)
            else:
                yield sentence

    def corrected(clause: str, marked: bool) -> bool:
        """Whether ``clause`` corrected a candidate of this conversation (fixed in place), a
        memory an earlier session stored (restated to take its place), or a count the user
        gave in words nothing kept ("3 cats" after "... with 3 kids")."""
        lead = strip_leads(clause)
        earlier = len(thread.kept)
        marked = marked or lead.marker or lead.change
        fixed = corrections.fix(corrections.opening(clause), marked, thread.kept + out.memories)
        if fixed is None:
            put_right = corrections.restated(corrections.opening(lead.text), marked, text,
                                             thread.stored)
            out.memories.extend(c.model_copy(update={"evidence": [index]}) for c in put_right)
            if put_right:
                return True
            owned = corrections.recounted(corrections.opening(lead.text), before[0])
            found = None if owned is None else _clause(owned, at, True)
            if isinstance(found, Result):
                keep(found, clause)
            return isinstance(found, Result)
        where, at_index = ((thread.kept, fixed.index) if fixed.index < earlier
                           else (out.memories, fixed.index - earlier))
        where[at_index] = where[at_index].model_copy(update={
            "content": fixed.content, "value": fixed.value, "asserts_change": True,
            "evidence": sorted({*where[at_index].evidence, index})})
        return True

    for sentence in said():
        opening = strip_leads(sentence).text
        if any(HYPOTHETICAL_START.match(s) for s in (sentence.lstrip(_EDGE), opening)):
            skip("hypothetical", sentence)
            continue
        if _JOKING.search(sentence):
            # "my retirement plan is to marry a billionaire jk": not meant, so not true; a
            # "jk" on its own takes back the sentence before it.
            if not _TONE.sub("", _JOKING.sub("", sentence)):
                taken = [c for c in out.memories if c.evidence == [index]
                         and c.content in last_sentence]
                for c in taken:
                    out.memories.remove(c)
            skip("hypothetical", sentence)
            last_sentence = []
            continue
        last_sentence = []
        marked = strip_leads(sentence).marker
        mine = corrections.about_me(sentence, name, " ".join(heard))
        if mine is not None:
            # "Nashville, Nora.": what the other speaker said of this one, put right where it
            # was said, and said again in this speaker's own words.
            for where in (thread.kept, out.memories):
                for i, c in enumerate(where):
                    if name and re.search(rf"\b{re.escape(name)}\b", c.content) and (
                            mine.wrong in c.content):
                        where[i] = c.model_copy(update={
                            "content": c.content.replace(mine.wrong, mine.right),
                            "asserts_change": True})
            own = f"I'm {mine.lead}{mine.right}"
            found = _clause(own, at, True)
            if isinstance(found, str):  # no family reads it: kept as said, as an answer is
                found = Result(third_person(expand(own)), "fact", confidence=answers.CONFIDENCE,
                               change=True, valid_from=at)
            before[0] = " ".join(heard)
            heard.append(sentence)
            keep(found, sentence)
            continue
        for clause in (c for whole in clauses(sentence) for c in _listed(whole, at)):
            before[0] = " ".join(heard)
            heard.append(clause)
            # A slotted statement corrected is a new value of its slot ("actually it's Porto,
            # not Lisbon"): the write path supersedes. Anything else said wrong in this
            # conversation is fixed where it was said, before it is stored.
            found = corrections.of_last_statement(clause, thread.antecedent)
            if found is None:
                if corrected(clause, marked or carry_change):
                    continue
                tail = _IT_IS_TAIL.search(clause) if marked or carry_change else None
                if tail is not None and corrected(tail["tail"], True):
                    clause = clause[:tail.start()]  # "scratch that, ..., it's 10 mg"
                    if not strip_leads(clause).text:
                        continue
                if corrections.names_a_slip(corrections.opening(clause)):
                    skip("correction", clause)  # of the assistant's words: nothing of ours
                    continue
                # "he moved to Denver": read first with the person just named in his place.
                found = (_about_someone(clause, before[0], at, carry_change)
                         or _clause(clause, at, carry_change))
            carry_change |= _marks_change(clause)
            if isinstance(found, Result) and found.slot and found.value:
                thread.antecedent = found
            if isinstance(found, str):
                if _named_earlier(clause, out.memories):
                    continue
                if thread.frames and _answers(found, clause):
                    fragments.append(clause)
                elif found == "question":
                    asked_about(clause)
                elif not _marks_change(clause):
                    skip(found, clause)
                continue
            keep(found, clause)
    before[0] = " ".join(heard)
    for clause, found in _answered(thread.frames, fragments, at):
        if isinstance(found, str):
            skip(found, clause)
        else:
            keep(found, clause)
    if not out.memories and not out.not_kept:
        # Nothing that reads as a sentence (an emoji, a code block, a quote): said so too.
        skip("no_statement", text.strip() or None)
    return Extraction(memories=out.memories, not_kept=out.not_kept)


# Where a question starts after something said: "I'm allergic to penicillin — what can I
# take instead?", "I just opened an account with Ally, do they refund ATM fees?", "as a
# nurse, which certification should I get?".
_ASKED_AFTER = re.compile(
    r"(?:\s+[-–—]+\s+|[,:;]\s+|\.\.+\s*|\s{2,}"
    # No punctuation at all: a question's unmistakable opening ("... reading glasses is that
    # normal?", "... in Denver what should I do?").
    r"|\s+(?=(?:is|are|was|does|do|did|can|could|should|would|will)\s+(?:that|this|it|i|you|"
    r"there|they|we)\b|(?:what|how|where|when|which|who|why)\s+(?:do|does|did|should|can|"
    r"could|would|is|are|was|were)\s+(?:i|we|you|it|that|they|he|she)\b))(?=\S)", re.I)
# "turns out im allergic to kiwi too??": a statement said in surprise, not a question; it
# asks nothing, it opens with the speaker, and its marks are doubled.
_SURPRISED = re.compile(r"\s*(?:\?[?!]+|!+\?[?!]*)$")
_HEADING = re.compile(r"^[^:()?]{1,40}:\s+")  # "fun new development: ..."
_FIRST_PERSON_START = re.compile(r"^(?:i|i'm|im|my|we|we're|our)\b(?!\s+(?:should|could|would|"
                                 r"can|might|wonder)\b)", re.I)
_AS_A = re.compile(r"(?:^|[,.;:]\s*)as\s+(?P<what>an?\s+[\w-]+(?:\s+[\w-]+){0,3})$", re.I)


_JOKING = re.compile(r"(?<!\bnot\s)(?<!\bno\s)(?<!\bnot\sjust\s)"
                     r"\b(?:jk|j/k|just\s+kidding|kidding|only\s+joking|joking)\b\)?", re.I)
_TWO_DOTS = re.compile(r"(?<!\.)\.\.(?!\.)")  # "jk." marked again after its own "."
_TONE = re.compile(r"\b(?:lol|lmao|haha+|ha|omg|ok|okay|anyway)\b|[^\w]+", re.I)
_IT_IS_TAIL = re.compile(r",\s+(?P<tail>(?:it's|it\s+is|that's|that\s+is)\s+.+)$", re.I)


def asked_after(sentence: str) -> tuple[str, str]:
    """A sentence ending in a question split into what it says first and what it asks:
    ``("I'm allergic to penicillin", "what can I take instead?")``. The first part is empty
    when the whole sentence asks. A role the speaker asks from ("as a nurse, which ...") is
    said: "I am a nurse"."""
    start = 0
    if QUESTION_START.match(expand(strip_leads(sentence).text)):
        return "", sentence  # "What time is it?": a question from its first word
    if _SURPRISED.search(sentence) and _FIRST_PERSON_START.match(
            expand(strip_leads(_HEADING.sub("", sentence)).text)) and not any(
            QUESTION_START.match(expand(strip_leads(sentence[m.end():]).text))
            for m in _ASKED_AFTER.finditer(sentence)):
        return _SURPRISED.sub("", sentence), ""
    for m in _ASKED_AFTER.finditer(sentence):
        rest = strip_leads(sentence[m.end():]).text
        if QUESTION_START.match(expand(rest)) or rest.lower().startswith(("any ", "anyone ")):
            start = m.end()
            break
    said, asked = sentence[:start].rstrip(" ,:;-–—."), sentence[start:]
    role = _AS_A.search(said) or _AS_A.search(strip_leads(said).text)
    if role is not None:
        said = said if _AS_A.search(said) else strip_leads(said).text
        said = f"{said[:role.start()]}. I am {role['what']}".lstrip(". ")
    return said.strip(), asked


_A_COUNT = re.compile(r"^(?:like\s+|about\s+|around\s+)?\d+\b(?!\s+(?:i|we)\b)[^.!?]{0,20}$", re.I)
_A_CLAUSE = re.compile(r"^(?:it|it's|this|that|that's|they|they're|he|she|he's|she's|there|"
                       r"these|those|you|we)\b", re.I)


def _answers(reason: str, clause: str) -> bool:
    """Whether a clause no family kept may be a short answer to the assistant's question:
    it says nothing alone ("boulder", "11 and 8", "nah"), rather than something refused
    (a question, a hypothetical, someone else's words)."""
    text = strip_leads(clause).text
    if reason == "vague" and _A_COUNT.match(text):
        return True  # "14 incl me": a count, whatever remark comes with it
    if reason not in ("no_statement", "small_talk"):
        return False
    if not text:
        return bool(answers.YES_OR_NO.match(clause.strip()))
    if len(text.split()) > answers.MAX_WORDS or _A_CLAUSE.match(text) or "[" in text:
        return False  # a clause of its own ("it took time and effort"), not a value
    if answers.YES_OR_NO.match(clause.strip()):
        return screen(expand(text)) is None  # "yep celiac": a yes and the value it brings
    return reason == "no_statement" and screen(expand(text), clause) is None


def _answered(frames: list[answers.Frame], fragments: list[str], at: datetime
              ) -> list[tuple[str, Result | str]]:
    """Each fragment read with the question part it answers, in order (more fragments
    than questions: the rest answer the last one)."""
    if not frames or not fragments:
        return [(f, "no_statement") for f in fragments]
    paired = list(zip(frames, fragments))
    if len(fragments) > len(frames):
        last = ", ".join(fragments[len(frames) - 1:])
        paired[-1] = (frames[-1], last)
    out: list[tuple[str, Result | str]] = []
    for frame, fragment in paired:
        sentence = frame.fill(fragment)
        found = _clause(sentence, at, False) if sentence else "no_statement"
        if frame.wh is None and sentence is None and not answers.YES_OR_NO.match(fragment):
            # "Are you shopping for a replacement?" → "rice did nothing": not an answer.
            out.append((fragment, found))
            continue
        if frame.wh is not None and frame.value(fragment) is None:
            out.append((fragment, found))  # "Any allergies?" → "nope": nothing to keep
            continue
        if not isinstance(found, Result):
            # What no family reads stays as said: the sentence the answer completes, or
            # else the question's topic and the answer.
            content = (third_person(expand(sentence)) if sentence
                       else answers.answer_content(frame, fragment))
            found = Result(content, "fact", confidence=answers.CONFIDENCE, valid_from=at)
        out.append((fragment, found))
    return out


def _about_someone(clause: str, before: str, at: datetime, change: bool) -> Result | None:
    """A clause about "he" or "she" read with the person the user just named in their
    place: "my sister is visiting. she moved to Denver in May" says the sister moved; a
    newborn's name and weight, as that person's baby."""
    lead = strip_leads(clause)
    told = (referents.person_subject(expand(lead.text), before)
            or referents.person_object(expand(lead.text), before)
            or referents.newborn(clause.strip(), before))
    if told is None:
        return None
    found = _clause(told, at, change)
    if isinstance(found, Result):
        return found
    if found != "no_statement" or screen(told) is not None:
        return None
    # A named person, no first person: the generic statement, as it is about their world.
    said = statements.statement(f"I know that {told}")
    if said is None:
        return None
    content = told[:1].upper() + told[1:]
    tense = date.when if (date := find_date(told, at, guess_tense(told))) else at
    return Result(content, said.kind, confidence=said.confidence, change=change,
                  valid_from=tense)


def _listed(clause: str, at: datetime) -> list[str]:
    """A clause that lists what happened ("left Uber for Airbnb, we moved to Oakland,
    adopted a mutt named Tofu") as one clause an item, where each item says something on its
    own; an item that says nothing alone ("two cats named Mango and Kiwi") stays with its
    neighbour, as it was said. An item with its subject left out takes the first item's
    ("he's five now, started kindergarten at X": he started)."""
    items = list_items(clause)
    if len(items) == 1:
        return items
    who = _LIST_SUBJECT.match(items[0])
    if who is not None and who["s"].casefold() not in ("i", "we"):
        items = [f"{who['s']} {item}" if i and subject_dropped(item) else item
                 for i, item in enumerate(items)]
    out: list[str] = []
    pending: list[str] = []
    for item in items:
        if isinstance(_clause(item, at, False), Result):
            out.append(", ".join([*pending, item]))
            pending = []
        elif out:
            out[-1] = f"{out[-1]}, {item}"
        else:
            pending.append(item)
    return out or [clause]


_LIST_SUBJECT = re.compile(r"^(?P<s>i|we|he|she|they|(?-i:[A-Z][a-z]+))(?:'s|\s+(?:is|are|was|"
                           r"has|have)\b)", re.I)


def _named_earlier(clause: str, memories: list[Candidate]) -> bool:
    """Whether ``clause`` names someone this message just introduced ("we adopted a kitten!!!
    her name's Miso"): the name is put in the statement that introduced them, in place."""
    name = referents.name_given(strip_leads(clause).text)
    for i in reversed(range(len(memories)) if name else ()):
        content = referents.with_name(memories[i].content, name)
        if content is not None:
            memories[i] = memories[i].model_copy(update={"content": content})
            return True
    return False


def _marks_change(clause: str) -> bool:
    """"I changed my mind." / "Actually..." on its own: it is about what follows."""
    lead = strip_leads(clause)
    return lead.marker and not lead.text


_WHEN_I_WAS = re.compile(
    r"^(?:back\s+)?when\s+(?P<then>(?:i|we)\s+(?:was|were|did|lived|worked|taught|studied|"
    r"had|went|played|ran|was\s+still|\w+ed)\b[^,]*?\b(?:at|in|for|on|with|as|my|our)\b"
    r"[^,]*?)(?:,\s*|\s+(?=(?:i|we|my|our|they|he|she|it)\b))(?P<main>\S.*)$", re.I)
_TOLD_ME = re.compile(r"^(?:my|our|the)\s+(?:[\w'-]+\s+){0,3}?(?:said|says|told\s+me|"
                      r"confirmed|thinks)\s+(?:that\s+)?(?=(?:i|i'm|i've|my)\b)", re.I)
_ADVICE = re.compile(r"^(?:i|i'm|i\s+am)\s+(?:\w+\s+)?(?:should|could|might|must|need\s+to|"
                     r"have\s+to|ought|would|may)\b", re.I)
_COPULA_LEFT = re.compile(r"^\s*(?=(?:was|is|will\s+be|has\s+been)\s+(?:my|our|the)\b)", re.I)


def _clause(clause: str, at: datetime, carry_change: bool) -> Result | str:
    """The candidate in one clause, or the reason there is none. What the clause says of
    time and place around its statement is read here, whichever family read the statement:
    a state told as over is history, and a place the speaker calls "here" is their home."""
    found = _read_clause(clause, at, carry_change)
    if not isinstance(found, Result) or found.valid_to is not None:
        return found
    if told_as_over(expand(strip_leads(clause).text)) and not _an_end(found):
        return _history(found, at)
    where = here_in(clause)
    if where is not None and found.slot != where.slot:
        found.also.append(Result(where.content, where.kind, where.slot, where.value,
                                 where.confidence, valid_from=at))
    return found


def _an_end(found: Result) -> bool:
    """Whether ``found`` ends a state ("I quit smoking in college", "I stopped eating meat
    in high school"): an end told of the past still holds now, so it is no history."""
    return bool(found.slot) and (found.slot.startswith("ended:") or found.value is None)


def _history(found: Result, at: datetime) -> Result:
    """A state told as over ("I ran the 400 in high school"): kept as history, an event that
    had ended by the time it was said and keys no slot, so it retires nothing current."""
    return Result(found.content, "event", confidence=found.confidence, change=False,
                  also=[_history(f, at) for f in found.also], valid_from=found.valid_from,
                  valid_to=at)


def _read_clause(clause: str, at: datetime, carry_change: bool) -> Result | str:
    if clause[:1] in "\"'":
        return "reported"
    lead = strip_leads(clause)
    text = lead.text
    if not text:
        return "small_talk"
    then = _WHEN_I_WAS.match(text)
    if then is not None:
        # "when I was at Oracle my boss would've ...": a state of the past, kept as history
        # (an event, no slot: it retires nothing current); the story around it is not.
        said = expand(then["then"].strip(" ,"))
        return Result(f"In the past, {third_person(said)[:1].lower()}{third_person(said)[1:]}",
                      "event", confidence=0.6, valid_from=at, valid_to=at)
    told = _TOLD_ME.match(text)
    if told is not None and not _ADVICE.match(text[told.end():]):
        # "my endocrinologist said I'm done with metformin": what they found is the user's
        # fact; what they advise ("said I should ...") stays their words.
        text = text[told.end():]
    change = carry_change or lead.change
    reason = screen(expand(text), clause)
    if reason == "small_talk":
        # "it's over!! 328", "it's remote now, moved to Monday": a word on a plan reads as a
        # remark until the plan is found.
        expanded = expand(text)
        said = plans.scheduled(expanded, find_date(expanded, at, guess_tense(expanded)), at)
        if said is not None:
            said.change |= change
            return said
    if reason is not None:
        return reason

    standing = instruction(text)
    if standing is not None:
        slot, value = instruction_slot(standing)
        return Result(standing, "instruction", slot, value, confidence=0.85, change=change,
                      valid_from=at)
    if CONDITIONAL.search(text):
        return "hypothetical"

    # "got a new job at Datadog": the "I" put back before the tense and the date are read.
    expanded = statements.restore_subject(expand(text))
    change |= bool(re.search(r"\bactually\b", expanded, re.I))
    hedged = lead.hedge or re.search(r"\b(?:maybe|probably|perhaps)\b", expanded, re.I)
    penalty = 0.15 if hedged else 0.0
    tense = guess_tense(expanded)
    date = find_date(expanded, at, tense)

    annual = plans.scheduled(expanded, date, at) or _annual(expanded, date, at)
    if annual is not None:
        annual.change |= change
        return annual

    body = expanded
    if date is not None:
        # "Sunday was my last shift": with its date gone, "it" is the copula's subject.
        inner = strip_leads(_COPULA_LEFT.sub("it ", remove_date(expanded, date), count=1))
        body, change = statements.restore_subject(expand(inner.text)), change or inner.change
        lead.context = ", ".join(c for c in (lead.context, inner.context) if c)
        penalty = max(penalty, 0.15 if inner.hedge else 0.0)
        reason = screen(body) if body else "small_talk"
        if reason is not None:
            return reason
    if len(body) > _MAX_CLAUSE:
        return "too_long"

    for pattern, handler in FAMILIES:
        m = pattern.match(body)
        if m is None:
            continue
        found = handler(m, body)
        if found is None:
            continue
        if isinstance(found, str):
            return found
        when = date.when if date is not None else at
        if found.kind == "event" and date is not None:
            found.content = f"{found.content} {render(date)}"
        return Result(_with_context(lead, found.content), found.kind, found.slot, found.value,
                      found.confidence - penalty, found.change or change,
                      also=[Result(f.content, f.kind, f.slot, f.value, f.confidence - penalty,
                                   f.change or change, valid_from=when) for f in found.also],
                      valid_from=when)
    ended = LIVED_IN.match(body)
    if ended is not None and date is not None and date.when < at:
        m = re.match(r"(?P<v>.+)$", body[ended.end():])
        found = IN_PLACE(m, body) if m else None
        if found is not None:
            return Result(_with_context(lead, f"{third_person(body)} {render(date)}"), "fact",
                          found.slot, found.value, found.confidence - penalty, False,
                          valid_from=date.when, valid_to=min(_span_end(date), at))

    if _HABIT.match(expanded):
        # A habit keeps its day words ("on Mondays"): they say when, not since when.
        return Result(_with_context(lead, third_person(expanded)), "fact",
                      confidence=0.7 - penalty, change=change, valid_from=at)

    if date is not None and _event_ok(body):
        content = f"{third_person(statements.restore_subject(body))} {render(date)}"
        return Result(_with_context(lead, content), "event", confidence=0.75 - penalty,
                      change=change, valid_from=date.when)

    reason = about_speaker(body)
    if reason is not None:
        return reason
    found = statements.statement(body)
    if found is None:
        return "vague"
    return Result(_with_context(lead, found.content), found.kind, confidence=found.confidence
                  - penalty, change=change, valid_from=date.when if date is not None else at)


def _span_end(date: DateMatch) -> datetime:
    """The end of the period a date names ("in 2024" ends at 2025-01-01)."""
    when = date.when
    if date.granularity == "year":
        return when.replace(year=when.year + 1)
    if date.granularity == "month":
        return (when.replace(day=28) + timedelta(days=4)).replace(day=1)
    if date.granularity == "week":
        return when + timedelta(days=7)
    return when + timedelta(days=1)


def _with_context(lead: Lead, content: str) -> str:
    """Put back a qualifier the clause opened with: "For backends, the user prefers Mongo",
    "When the user flies, the user always books an aisle seat"."""
    if not lead.context:
        return content
    if content.startswith("The user"):
        content = "t" + content[1:]
    context = third_person(expand(lead.context))
    return f"{context}, {content}"


def _annual(text: str, date: DateMatch | None, at: datetime) -> Result | None:
    """"my birthday is May 3" is a fact with a yearly date; "my flight is tomorrow" an event."""
    m = _MY_X_IS.match(text)
    if m is None or date is None:
        return None
    y = squash(m["y"])
    said = squash(date.text).lower().removeprefix("on ")
    if not (text.endswith(date.text) and said == y.lower().removeprefix("on ")):
        return None
    slot = snake(m["x"])
    if slot in _ANNUAL:
        value = normalize_value(re.sub(r"^on\s+", "", y, flags=re.I))
        whose = f"person.{snake(m['who'])}" if m["who"] else "user"
        return Result(third_person(text), "fact", f"{whose}.{slot}", value, 0.85, valid_from=at)
    if m["who"]:
        return None
    body = remove_date(text, date)
    return Result(f"{third_person(body)} {render(date)}", "event", confidence=0.75,
                  valid_from=date.when)


def _event_ok(body: str) -> bool:
    text = statements.restore_subject(body)
    if not FIRST_PERSON.search(text) or REPORTED.search(text):
        return False
    if _SMALL_TALK_EVENT.match(text) or len(text.split()) < 3:
        return False
    return True
