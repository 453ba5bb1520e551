"""Standing instructions to the agent: "always answer in French", "never use emoji", "from
now on, reply in English", "I want you to always ...". Kept imperative, as written."""

from __future__ import annotations

import re

from strata.ingest.rules.text import FIRST_PERSON, squash


_INSTRUCTION_VERBS = (
    r"use|include|add|call|mention|reply|respond|answer|write|send|suggest|recommend|show|"
    r"format|put|say|ask|remind|give|apologi[sz]e|explain|summari[sz]e|translate|share|store|"
    r"contact|email|schedule|book|cc|commit|push|deploy|delete|remove|change|edit|run|"
    r"assume|guess|make|sign|start|end|open|close|post|text|message|ping"
)
_INSTRUCTION = [
    # "Always happy to help" is a feeling, not an order: the word after "always" is a verb.
    re.compile(r"^(?:please\s+)?(?:always|never(?:\s+ever)?)\b(?!\s+mind\b)"
               r"(?!\s+(?:happy|glad|here|there|good|great|nice|fun|a\s+pleasure|welcome|"
               r"up\s+for|down\s+for|ready)\b)\s+\S+\s+\S+", re.I),
    re.compile(r"^(?:please\s+)?(?:don't|do\s+not)\s+ever\b\s+\S+", re.I),
    re.compile(r"^please\s+(?:don't|do\s+not)\s+\S+", re.I),
    re.compile(rf"^(?:don't|do\s+not)\s+(?:{_INSTRUCTION_VERBS})\b", re.I),
]
_FROM_NOW_ON = re.compile(
    r"^(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|"
    r"starting\s+(?:now|today))\b[\s,:;\-–—]*(?P<rest>.+)$", re.I,
)
_WANT_YOU_TO = re.compile(
    r"^(?:i\s+want\s+you\s+to|i'?d\s+like\s+you\s+to|i\s+would\s+like\s+you\s+to|"
    r"i\s+need\s+you\s+to|(?:please\s+)?(?:remember|make\s+sure|be\s+sure)(?:\s+to|\s+you)?)\s+"
    r"(?P<rest>(?:always|never)\b.+)$", re.I,
)
_PLEASE = re.compile(r"\bplease\b[\s,]*", re.I)


def _imperative(text: str) -> str:
    text = squash(_PLEASE.sub("", text))
    return text[:1].upper() + text[1:]


def instruction(text: str) -> str | None:
    """The imperative content if ``text`` is a standing instruction to the agent."""
    m = _WANT_YOU_TO.match(text)
    if m:
        return _imperative(m["rest"])
    if any(p.match(text) for p in _INSTRUCTION):
        return _imperative(text)
    m = _FROM_NOW_ON.match(text)
    if m and not FIRST_PERSON.match(m["rest"]):
        return _imperative(text)
    return None



_IN_LANGUAGE = re.compile(
    r"\b(?:answer|reply|respond|write|talk|speak|communicate|chat|text)\b.*?\bin\s+"
    r"(?P<lang>(?-i:[A-Z])[a-z]+)\b", re.I)


def instruction_slot(content: str) -> tuple[str | None, str | None]:
    """The slot a standing instruction holds, when it has one: the language to answer in
    ("always answer in French", later "from now on reply in English")."""
    m = _IN_LANGUAGE.search(content)
    if m is None or re.search(r"\b(?:never|don't|do\s+not)\b", content, re.I):
        return None, None
    return "agent.reply_language", m["lang"].lower()
