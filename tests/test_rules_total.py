"""The rule extractor reads every message it is given: whatever the words, it answers with
memories and reasons, never an exception (an exception fails the whole conversation's receipt).

Messages are generated from the pieces the rule families key on -- dates and times, plan and
end words, corrections, answers to questions, pronouns, names, lists, emoji and stray
punctuation -- in any order, so the families meet each other's edge cases (a clause that is
only a date, a reason with nothing before it, a correction of nothing).
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from strata.ingest.models import Message
from strata.ingest.rules import RuleExtractor

PIECES = [
    "feb 1", "on the 21st", "next friday", "at 7", "since march", "2025-06-01", "tomorrow",
    "before I chicken out", "because of the rain", "due to a conflict", "so", "but", "and",
    "I", "we", "my sister Dana", "he", "she", "it", "that", "they", "you", "Tom", "Zorvax",
    "moved", "pushed", "cancelled", "quit", "left", "got", "passed", "is", "was", "not",
    "to", "from", "at", "in", "with", "for", "the trip", "my flight", "the exam", "a puppy",
    "actually", "scratch that", "*", "no", "nope", "yep", "lol", "jk", "???", "!!", "...",
    ".", ",", ":", "—", "(", ")", "🎉", "😭", "3 kids", "3 cats", "not", "anymore", "now",
]
MESSAGE = st.lists(st.sampled_from(PIECES), min_size=1, max_size=14).map(" ".join)
ASKED = st.sampled_from(["", "What's your budget?", "Any allergies?", "Where are you based?",
                         "What's their name?", "What breed?", "Are you still at Acme?",
                         "Have you picked a date?"])
AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@given(first=MESSAGE, asked=ASKED, answer=MESSAGE)
@settings(max_examples=400, deadline=None, derandomize=True)
def test_every_message_is_read_without_an_exception(first, asked, answer):
    messages = [Message(role="user", content=first, at=AT)]
    if asked:
        messages.append(Message(role="assistant", content=asked, at=AT))
    messages.append(Message(role="user", content=answer, at=AT))
    out = RuleExtractor().extract(messages, AT)
    # Every user message is accounted for: a memory or a reason for each.
    assert out.memories or out.not_kept


def test_a_date_alone_before_a_reason_is_read():
    """The case that once raised (a clause that is a date, then a reason with no plan)."""
    out = RuleExtractor().extract([
        Message(role="assistant", content="Have you picked a quit date?", at=AT),
        Message(role="user", content="feb 1. before I chicken out", at=AT)], AT)
    assert out.memories or out.not_kept
