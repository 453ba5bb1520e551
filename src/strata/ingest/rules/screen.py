"""Why a clause is not kept. Every user clause either becomes a candidate or gets one of these
reasons on the receipt (``NotKept``); the checks run in the order of ``screen``.

- ``question``: "should I move to Berlin?", "do you know ...".
- ``hypothetical``: "if I ever move ...", "what if I switched ...", "I wish ...", "we should
  ...", "I could ...": not something that is true.
- ``past``: "I used to prefer X", "back when I lived in Rome": not true now (a dated past
  event, "I went to Rome last May", is an event and is kept).
- ``reported``: "my boss said I should learn Go", "I told you ...": someone's words, not a
  statement of fact.
- ``other_person``: the clause is about the listener ("you're doing great", "your studio looks
  amazing"), not the speaker.
- ``small_talk``: greetings, thanks, reactions and feelings of the moment ("thanks, that's
  great!", "I'm so happy for you", "I can't wait", "I'm tired today"), talk about the
  conversation itself ("quite a week since we last talked") and team spirit with the listener
  ("we make a great team").
- ``vague``: a statement whose object is only a pronoun ("I love it", "I made them myself",
  "I'll definitely check it out").
- ``no_statement``: nothing the speaker says about themselves or their world.
- ``correction`` (decided by the extractor, ``corrections``): the fix of a slip ("*Venice",
  "Shawn with a w", "X not Y") with nothing in the conversation to fix: it corrects the
  assistant.
"""

from __future__ import annotations

import re

from strata.ingest.rules.text import (
    CONDITIONAL, FIRST_PERSON, HYPOTHETICAL_START, NOT_NOW, QUESTION_START, REPORTED,
    told_as_over,
)

_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves|ya|u|ur)\b", re.I)
# The speaker reacting to the listener or to the moment: what the clause opens with decides.
_REACTION = re.compile(
    r"^(?:i|we)\s+(?:(?:really|totally|completely|so|definitely|just|also|sure|truly|"
    r"absolutely|do|can|am|too)\s+)*"
    r"(?:appreciate|agree|disagree|hope|bet|understand|imagine|guess|"
    # "I see (what you mean)" acknowledges; "I see my therapist on Mondays" is a habit.
    r"see(?=\s*(?:$|[,.!;]|(?:what|how|why|where|that|it|this|your|you|"
    r"the\s+(?:appeal|point))\b))|"
    r"can\s*not\s+wait|cannot\s+wait|can\s+relate|feel\s+you|mean|wonder|"
    r"know\s+(?:what|how|right|that|it|the\s+feeling)|hear\s+you|get\s+(?:it|that|you)|"
    r"(?:am|feel|felt)\s+(?:(?:so|really|super|very|truly|totally|pretty)\s+)*"
    r"(?:glad|happy\s+(?:for|to\s+hear)|sorry|proud\s+of|thankful|grateful|here\s+for|"
    r"excited\s+(?:for|to\s+(?:hear|see))|touched|flattered|honou?red|sure|in\s+awe)|"
    r"love\s+(?:that|it|this|how|the\s+way|hearing|seeing)|like\s+(?:that|it|this)|"
    r"will\s+(?:keep|let|definitely\s+let|talk|see|make\s+sure|give\s+it|send|share|check|"
    r"catch)|wanted\s+to\s+(?:share|show|tell|let)|got(?:ta)?\s+(?:tell|show|say)|"
    r"have\s+to\s+(?:say|admit|agree)|must\s+(?:say|admit)|cannot\s+(?:believe|imagine)|"
    r"think\s+(?:so|that\s+is|it\s+is|this\s+is))\b",
    re.I,
)
# A feeling of the moment and nothing else: "I'm so excited!", "I feel great today".
_FEELING = re.compile(
    r"^(?:i|we)\s+(?:am|are|feel|felt|was|were|have\s+been)\s+(?:\w+\s+){0,2}"
    r"(?:happy|glad|excited|stoked|pumped|thrilled|tired|exhausted|great|good|fine|okay|ok|"
    r"amazing|awesome|sad|bummed|nervous|anxious|stressed|blessed|lucky|grateful|thankful|"
    r"hopeful|determined|ready|sure|positive|overwhelmed|proud|relieved|speechless|touched|"
    r"inspired|motivated|busy|well)\b(?!\s+(?:at|in|with)\b)(?:\s+\S+){0,3}$",
    re.I,
)
_SMALL_TALK = re.compile(
    r"^(?:thanks|thank\s+you|thx|ty|hi|hey|hello|yo|bye|goodbye|see\s+you|take\s+care|"
    r"good\s+(?:morning|night|evening|luck)|congrats|congratulations|cheers|cool|wow|great|"
    r"awesome|nice|sweet|lol|haha|ok|okay|sure|yes|yeah|yep|no\s+problem|no\s+worries|"
    r"never\s+mind|nevermind|sounds\s+(?:good|great|fun)|same\s+here|me\s+too|exactly|"
    r"definitely|absolutely|totally(?!\s+(?:different|unrelated|new)\b)|of\s+course|"
    r"keep\s+(?:it\s+up|going|up\s+the)|good\s+job|"
    r"well\s+done|way\s+to\s+go|that\s+is|that's|it\s+is|it's|this\s+is|what\s+a)\b",
    re.I,
)
# Modal verbs after the subject make a clause a possibility, not a fact — except "can" of an
# ability ("I can speak French").
_MODAL = re.compile(
    r"^(?:i|we)\s+(?:\w+ly\s+)?(?:should|could|might|may|must|ought\s+to|"
    r"would(?!\s+(?:\w+ly\s+)?(?:prefer|rather|like(?!\s+to)))|"
    r"can(?!\s+(?:speak|play|cook|drive|swim|code|program|read|write|sing|dance|ski|"
    r"surf|paint|draw|knit|sew|fly)\b))\b",
    re.I,
)
_SUBJECT_DROPPED = re.compile(
    r"^(?:(?:just|finally|recently|also|still|really|now|only)\s+)*"
    r"(?:got|started|finished|went|been|working|trying|doing|having|made|took|bought|visited|"
    r"joined|signed|learned|learning|planning|thinking|going|spent|spending|had|found|tried|"
    r"picked|getting|taking|making|reading|playing|painting|writing|watching|heading|"
    r"researching|practicing|practising|volunteering|teaching|training|building|moved|"
    r"moving|launched|opened|adopted|applied|completed|won|lost|met|saw|quit|switched|"
    r"landing|flying|arriving|staying|leaving|driving|traveling|travelling|starting|"
    r"dropped|decided|ran|based|living|located|hoping|looking\s+forward|gonna|wanna|"
    # "need a new laptop" is a need; "need a cleaning schedule" asks for what the assistant
    # writes
    r"need(?!\s+(?:(?:a|an|some|the)\s+)?(?:[\w-]+\s+)?(?:schedule|plan|list|chart|recipe|"
    r"ideas?|help|note|email|letter|template|checklist|menu|summary|advice|tips|draft)s?\b)|"
    r"throwing|hosting)\b",
    re.I,
)
# "registered for the half marathon", "signed up for a pottery class": any regular past verb
# before its object or particle, "I" left out -- but not a feeling ("excited for the trip").
_PAST_VERB_DROPPED = re.compile(
    r"^(?:(?:just|finally|recently|also|officially)\s+)*(?!(?:excited|tired|bored|stressed|"
    r"worried|scared|interested|obsessed|annoyed|exhausted|confused|surprised|shocked|"
    r"impressed|amazed|disappointed|relieved|thrilled|pumped|stoked|overwhelmed|embarrassed|"
    r"frustrated|terrified|pissed|hooked|addicted|blessed|spoiled|done|supposed|used|"
    # a plan's change, whose left-out subject is the plan ("rescheduled to Monday")
    r"rescheduled|pushed|postponed|delayed|bumped|shifted|cancell?ed|moved)\b)"
    r"[a-z]{3,}ed\s+(?:for|up|on|in|at|to|into|with|off|out|the|a|an|my|our|some|two|"
    r"three)\b",
    re.I)
# "vegetarian for 12 years", "sober since March": a state the speaker has been in, "I have
# been" left out.
STATE_FOR_SPAN = re.compile(
    r"^(?:vegetarian|vegan|pescatarian|pescetarian|sober|married|divorced|single|engaged|"
    r"retired|unemployed|remote|celibate|homeschooling|self-employed)\s+(?:for\s+(?:\w+\s+){0,2}"
    r"(?:years?|months?|weeks?|days?|decades?)|since)\b", re.I)
# "Been a long road", "Going to be a blast": an "it" left out, not an "I".
_IT_DROPPED = re.compile(r"^(?:been|going\s+to\s+be|gonna\s+be)\s+(?:a|an|the|so|such|really)\b",
                         re.I)
_PRONOUN_ONLY = re.compile(
    r"^(?:i|we)\s+(?:\w+\s+){1,2}(?:it|that|this|them|these|those|one|so|too)"
    r"(?:\s+(?:myself|ourselves|too|so\s+much|a\s+lot|very\s+much|as\s+well))?$",
    re.I,
)
# Taking up what the listener recommended, the thing only a pronoun: "I'll definitely check it
# out", "I'm going to have to look into that", "I'll add it to my list".
_UPTAKE = re.compile(
    r"^(?:i|we)\s+(?:(?:am|are|definitely|totally|really|surely|so|also|just|def)\s+)*"
    r"(?:will|shall|going\s+to|gonna|gotta|have\s+to|need\s+to)"
    r"\s+(?:(?:definitely|totally|really|surely|so|also|just|have\s+to|need\s+to|def)\s+)*"
    r"(?:check|look\s+into|look\s+up|give|add|try|watch|read|listen\s+to)\s+"
    r"(?:it|that|this|them|these|those|one)"
    r"(?:\s+(?:out|up|a\s+(?:try|shot|go|listen|read|watch)|to\s+(?:my|our)\s+(?:\w+\s+)?list|"
    r"sometime|soon|later|for\s+sure|too|as\s+well))*\W*$",
    re.I,
)


# Thanks, congratulations and kind words are small talk whoever they mention.
_THANKS = re.compile(r"^(?:thanks|thank\s+you|thx|congrats|congratulations|kudos|cheers|"
                     r"glad|so\s+glad|happy\s+to\s+(?:help|hear)|always\s+here|no\s+prob)\b",
                     re.I)
# A resolution with nothing in it to remember: "I'm gonna keep going", "I will not quit".
_RESOLVE = re.compile(
    r"^(?:i|we)\s+(?:am|are|will|shall|have\s+to|need\s+to)\s+"
    r"(?:(?:not|never|definitely|totally|really|just|so|gonna|going\s+to|always|still)\s+)*"
    r"(?:keep\s+(?:going|at\s+it|pushing|on|trying|it\s+up|working|fighting)|"
    r"make\s+it\s+(?:happen|work|count)|give\s+it\s+(?:my|our|a|their)|"
    r"do\s+(?:my|our)\s+best|give\s+up|giving\s+up|quit|quitting|stop|"
    r"let\s+(?:anything|anyone|it|that|this)|get\s+through|"
    r"stay\s+(?:positive|strong|motivated|focused|determined|hopeful|upbeat)|"
    r"be\s+(?:fine|ok|okay|alright|awesome|great|there)|try\s+(?:my|our)\s+best)\b",
    re.I,
)
_SUGGESTION = re.compile(r"^(?:let's|let\s+us|lets)\b", re.I)
_LISTENER_IMPERATIVE = re.compile(
    r"^(?:check\s+(?:out|this|it)|take\s+a\s+look|have\s+a\s+look|look\s+at|see\s+(?:this|here)|"
    r"keep\s+(?:it\s+up|going|at\s+it|up\s+the)|hang\s+in\s+there|enjoy|good\s+luck|"
    r"let\s+(?:me|us)\s+know|"
    r"don't\s+(?:worry|give\s+up)|do\s+not\s+(?:worry|give\s+up))\b",
    re.I,
)

# Talk about the conversation itself, with nothing else in the clause: "quite a week since we
# last talked", "it's been ages since we spoke", "crazy stuff has been happening", "something
# awesome happened to me".
_ABOUT_TALK = re.compile(
    r"^(?:(?:it's|it\s+is|it\s+has|been|quite|what|such|so)\s+)*(?:\w+\s+){0,3}?since\s+"
    r"(?:we|i|you)\s+(?:last\s+)?(?:talked|spoke|chatted|caught\s+up|texted|messaged)"
    r"(?:\s+last)?\W*$"
    r"|^(?:(?:so|some|a\s+lot\s+of|lots\s+of|so\s+many|\w+)\s+){0,2}(?:something|things?|"
    r"stuff|news)(?:'s)?(?:\s+\w+)?\s+(?:(?:has|have|is|been|just)\s+)*"
    r"(?:happened|happening|going\s+on)"
    r"(?:\s+(?:to|with|for)\s+(?:me|us)|\s+lately|\s+recently)*\W*$",
    re.I,
)
# Team spirit, the speaker and the listener together: "we make a great team", "we work well
# together", "we have each other's backs".
_TEAM = re.compile(
    r"^we\s+(?:(?:all|both|really|just|totally|definitely|sure|so|make|are|rock|work|have|"
    r"got|well|such|a|great|good)\s+)+(?:team|together|each\s+other's|one\s+another's)\b",
    re.I,
)


def screen(text: str, said: str = "") -> str | None:
    """The reason ``text`` (one clause, contractions expanded, lead-ins stripped) is not a
    statement worth keeping, or None when it may be one. ``said`` is the clause as written,
    before its lead-ins were stripped ("Thanks so much, that's great")."""
    if said and (_SMALL_TALK.match(said.strip()) or _THANKS.match(said.strip())) and not (
            FIRST_PERSON.search(text)):
        return "small_talk"
    if QUESTION_START.match(text):
        return "question"
    if HYPOTHETICAL_START.match(text) or _MODAL.match(text):
        return "hypothetical"
    if NOT_NOW.match(text) and not _habit_of_a_time_of_life(text):
        return "reported" if re.match(r"^(?:i|you|he|she|they|someone|somebody|people)\s+"
                                      r"(?:said|say|told|mentioned|claimed|wrote|think|"
                                      r"thought)\b", text, re.I) else "past"
    if _SUGGESTION.match(text):
        return "hypothetical"
    if _SMALL_TALK.match(text) and not FIRST_PERSON.search(text):
        return "small_talk"
    if (_THANKS.match(text) or _LISTENER_IMPERATIVE.match(text) or _REACTION.match(text)
            or _FEELING.match(text) or _RESOLVE.match(text) or _ABOUT_TALK.match(text)
            or _TEAM.match(text)):
        return "small_talk"
    return None


# Someone else's taste or opinion, which must not pass for the speaker's: "my wife prefers
# tea", "our CTO thinks Rust is overrated". (Facts about them are kept: "my sister lives in
# Rome".)
_THEIR_OPINION = re.compile(
    r"^(?:my|our)\s+(?:[\w-]+\s+){1,3}?(?:prefers?|likes?|loves?|enjoys?|hates?|dislikes?|"
    r"uses?|thinks?|believes?|feels?|says?|wants?|recommends?|suggests?|swears\s+by)\b",
    re.I,
)


# A feeling of the moment told as what something does to the speaker: "that pic takes me
# back", "seeing them together warms my heart", "it made my day", "this always puts a smile on
# my face". Said of a thing or a sight, not by the speaker about themselves.
_MOMENT = re.compile(
    r"^(?!(?:i|we)\b).*?\b(?:"
    r"(?:take|takes|took|taking)\s+(?:me|us)\s+(?:right\s+)?back(?=\W*$|\s+to\s+(?:when|those|"
    r"that\s+time|my\s+(?:childhood|youth)))|"
    r"(?:warm|melt|touch|fill|lift|brighten)(?:s|es|ed|ing)?\s+(?:my|our)\s+"
    r"(?:hearts?|spirits?|souls?|days?)|"
    r"(?:make|makes|made|making)\s+(?:my|our)\s+(?:day|week|heart\s+\w+)|"
    r"(?:put|puts|putting|bring|brings|brought|bringing)\s+a\s+(?:big\s+|huge\s+)?smile\s+"
    r"(?:on|to)\s+(?:my|our)\s+faces?|"
    r"(?:make|makes|made|making)\s+(?:me|us)\s+(?:\w+\s+)?(?:smile|grin|laugh|tear\s+up)|"
    r"(?:give|gives|gave|giving)\s+(?:me|us)\s+(?:the\s+)?(?:chills|goosebumps|butterflies)"
    r")\b",
    re.I,
)


def about_speaker(text: str) -> str | None:
    """Why a clause that no specific family took says nothing to keep about the speaker, or
    None when the generic statement family may keep it."""
    if _MOMENT.match(text):
        return "small_talk"
    if REPORTED.search(text):
        return "reported"
    if _THEIR_OPINION.match(text):
        return "other_person"
    if _SECOND_PERSON.search(text):
        return "other_person"
    if CONDITIONAL.search(text):
        return "hypothetical"
    if _PRONOUN_ONLY.match(text) or _UPTAKE.match(text):
        return "vague"
    if not (FIRST_PERSON.search(text) or subject_dropped(text)):
        return "no_statement"
    return None


# "Painting helps me ...": the -ing word is the subject, not a verb missing its "I".
_GERUND_SUBJECT = re.compile(r"^\w+ing\s+(?:\w+\s+){0,3}?(?:is|was|has|can|could|will|would|"
                             r"should|may|might|must|helps|makes|keeps|gives|"
                             r"brings|gets|lets|takes|feels|seems|sounds|looks|means|\w+s)\b",
                             re.I)


# "new GP Dr Ramires", "new bike": in a list of what changed, something the speaker now has,
# named by one noun and perhaps a name -- not "new job starts monday", which has its own verb.
NEW_THING = re.compile(r"^new\s+[a-z]{2,}(?:\s+(?-i:[A-Z])[\w.'-]*)*\s*(?=,|$)", re.I)


_USED_TO = re.compile(r"^(?:(?:i|we)\s+)?used\s+to\b", re.I)


def _habit_of_a_time_of_life(text: str) -> bool:
    """"I used to be a bartender in my 20s", "we used to camp every summer as kids": a habit
    or role tied to a time of one's life is the speaker's history, worth keeping (it answers
    "what did"); a bare "I used to drink coffee" is most often the old side of a change told
    next to the new one, and stays unsaid."""
    return bool(_USED_TO.match(text)) and told_as_over(text)


def subject_dropped(text: str) -> bool:
    """"Got a new job last week", "Working on a prototype": the speaker left out "I"."""
    if STATE_FOR_SPAN.match(text) or _PAST_VERB_DROPPED.match(text) or NEW_THING.match(text):
        return True
    return (bool(_SUBJECT_DROPPED.match(text)) and not FIRST_PERSON.match(text)
            and not _GERUND_SUBJECT.match(text) and not _IT_DROPPED.match(text))
