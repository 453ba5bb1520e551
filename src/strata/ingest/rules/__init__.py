"""The rule extractor: memories from what the user says, without a model.

The local default when no model is configured, and the fallback when the model fails or
returns garbage. Pure Python, deterministic, no I/O. Only ``user`` messages are mined:
assistant, system and tool messages are context, never facts about the user (an assistant's
claim about the user is only what a short answer such as "no, Lyon" corrects).

Where things are
    ``extract``       the orchestration: sentences -> clauses -> screen -> families, with
                      what the conversation carries (``extract.Thread``)
    ``answers``       a short reply read with the assistant's question it answers
    ``corrections``   a slip fixed where it was said ("*Venice", "scratch that, it's 10
                      mg"); a short correction of the last slotted statement ("actually
                      it's Porto, not Lisbon"); a memory an earlier session stored, put
                      right ("I gave you the wrong date before -- it's May 21st"); and a
                      speaker putting right what another said of them
    ``referents``     what "it", "that", "he" and "she" stand for
    ``text``          the clause and tense toolkit (cleaning, sentences, clauses,
                      contractions, lead-ins such as "actually", "btw", "I think")
    ``screen``        why a clause is not kept (question, hypothetical, reported, past,
                      other_person, small_talk, vague, no_statement); secrets are withheld by
                      ``strata.rules.secrets`` before anything else looks at a sentence
    ``person``        third-person rewriting, and the speaker's name in place of "the user"
    ``base``          objects of verbs, the lexicon slot an object names, numbers, ``Found``
    the families, tried in the order of ``extract.FAMILIES``:
        ``negations``    "I no longer use X", "I stopped drinking coffee", dislikes
        ``ends``         states that ended, keyed ``ended:<object>`` ("cancelled my gym
                         membership", "62 days without a cigarette", "we said goodbye to
                         Pepper"): they retire only what they name
        ``attributes``   any attribute of the user or a person in their life, keyed
                         ``user.<attr>`` / ``person.<who>.<attr>`` from the statement's shape
                         (where someone lives or works, role, school, age, manager, partner,
                         relationship, phone, car, laptop), events that imply one included
        ``preferences``  "I prefer/like/use X", favourites, and their changes
        ``identity``     name, home, employer, occupation, age, diet, "my X is Y"
        ``health``       allergies and intolerances
        ``belongings``   pets, family, vehicles, possessions, languages, instruments
        ``people``       other people by name ("Bob's birthday is May 4", "Leo started
                         kindergarten this week")
        ``decisions``    "we decided to use X for Y", "we're switching back to X", who
                         does which chore ("I'll take the bins": the speaker's)
        ``statements``   everything else the speaker says about themselves (runs last)
    ``plans``         plans keyed by what they are about, ``schedule.<topic>``, valued by
                      their state (a date, a place, ``cancelled``, ``done``): "my flight to
                      Tokyo is on July 10", "the airline moved my Tokyo flight to July 14",
                      "the Tokyo trip is off"; tried before the families on a dated clause
    ``instructions``  standing instructions to the agent ("always answer in French")

To add a kind of statement: a module with ``PATTERNS: list[(pattern, handler)]`` — a handler
takes the match and the clause and returns a ``Found`` or None (not this family after all) —
and its place in ``FAMILIES``.

Conventions
    content
        One standalone statement in the third person, keeping the user's wording: "I've
        switched to Postgres" → "The user has switched to Postgres"; with the speaker's name
        known (``Message.name``) → "Sam has switched to Postgres". Instructions stay
        imperative as written. Events carry their date in absolute form ("The user met Sam
        on 2026-05-12"); other kinds carry it only in ``valid_from``. No trailing full stop.
    slot / value
        Values are lowercase with aliases folded (``normalize_value``). Single-valued slots
        (``user.location``, ``user.employer``, ``user.occupation``, ``user.name``,
        ``user.preferred_<category>`` ...) take a new value by superseding the old one;
        multi-valued families (``user.languages``, ``user.vehicles``, ...) key each value
        (``strata.write.slots``), and a qualifier ("for scripting", "at work") keys a
        preference by its context, so values in different contexts coexist.
    negation
        "I no longer use MongoDB": the slot the positive statement would have, ``value =
        None``, ``asserts_change = True``; it retires only the holder whose value it names.
    history
        A state told as over ("I ran the 400 in high school", "my first car was a Corolla",
        "I lived in Berlin for three years", "when I was at Oracle ..."): an event with no
        slot whose ``valid_to`` is when it was said, so it retires nothing current and a
        question about the present ranks it low (``strata.search.ranking``, "Ended states").
    asserts_change
        Set by explicit change words ("actually", "switched to", "moved to", "now at",
        "joined", "left", "no longer", ...). A correction word standing alone ("I changed my
        mind. I prefer tea.") flags the statements after it in the same message.
    confidence
        0.85–0.9 for explicit forms, 0.75 for weaker ones, 0.7 for "my X is Y" and habits,
        0.6 for a plain statement no family recognised; hedges take 0.15 off.
"""

from strata.ingest.rules.base import preference_slot
from strata.ingest.rules.extract import FAMILIES, RuleExtractor, extract_message, read_message
from strata.ingest.rules.person import third_person
from strata.write.values import (
    ALIASES, CATEGORY, LEXICON, fold_aliases, lexicon_terms, negates, normalize_value,
)

__all__ = [
    "ALIASES", "CATEGORY", "FAMILIES", "LEXICON", "RuleExtractor", "extract_message",
    "fold_aliases", "lexicon_terms", "negates", "normalize_value", "preference_slot",
    "read_message", "third_person",
]
