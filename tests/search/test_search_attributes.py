"""Search that knows which attribute a question asks about (strata.search.asked; strata.search.ranking,
"Asked attribute"), through the HTTP API over real PostgreSQL.

Generated: for each attribute, questions in several everyday phrasings ("what does the user
do for a living", "where is the user based"), an answer that says the value without any of
the question's words, filed under the attribute's key, and distractors that share the
question's words but answer nothing. Each case has its control: the same answer with no key
(or the key of another attribute, or of another person) does not rank first -- so the key,
read against the question, is what put it there. Values are invented words.
"""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import support
from strata.search.asked import answers, asked

SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

NAME = st.tuples(st.sampled_from(["Dr", "Qu", "Br", "Zel", "Mor", "Thal", "Vik"]),
                 st.sampled_from(["avo", "enti", "ulka", "orin", "asse"])).map("".join)

# attribute -> (questions about the user, answers "{v}" for an invented value, distractors
# holding the question's words)
USER_CASES = {
    "occupation": (["what is the user's job?", "what does the user do for a living?",
                    "what's the user's profession these days?", "what does the user do for work?"],
                   ["The user is a {v} at the clinic downtown", "The user now trains as a {v}"],
                   ["The user's job hunt spreadsheet is a mess", "Work has been busy for the user "
                    "this week and they do not sleep enough", "The user likes living near work",
                    "These days the user's profession is a running joke with their parents"]),
    "location": (["where does the user live?", "which city is the user based in?",
                  "where is the user living now?"],
                 ["The user moved into a flat in {v}", "The user's new address is in {v}"],
                 ["The user wants to live somewhere with a garden", "The user's city council "
                  "meeting is on Tuesday", "Living with roommates drives the user nuts"]),
    "diet": (["what diet does the user follow?", "what does the user eat?"],
             ["The user has gone {v} since spring"],
             ["The user wants to eat out less", "Diet soda gives the user headaches",
              "The user's diet app keeps crashing"]),
    "age": (["how old is the user?", "what is the user's age?"],
            ["The user turned {v} last week"],
            ["The user's old phone broke", "The user feels old at the gym", "Age is just a "
             "number, the user says"]),
}


def _path() -> str:
    return f"users.u{uuid.uuid4().hex[:10]}"


def _search(client, headers, query: str, path: str) -> list[dict]:
    r = client.post("/v1/search", headers=headers, json={
        "query": query, "paths": [path], "explain": True, "limit": 10})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def _shown(question: str, got: list[dict]) -> list:
    return [question, *((r["content"], round(r["explain"]["rank_score"], 3)) for r in got)]


def _store(client, headers, path: str, answer: str, slot: str | None, value: str,
           distractors: list[str]) -> str:
    """The distractors, then the answer (keyed ``slot`` if any): the answer's id."""
    support.create_ok(client, headers, *({"content": d, "path": path} for d in distractors))
    item = {"content": answer, "path": path}
    if slot:
        item |= {"slot": slot, "value": value.casefold()}
    (r,) = support.create_ok(client, headers, item)
    return r["id"]


user_cases = st.sampled_from(sorted(USER_CASES)).flatmap(lambda attr: st.fixed_dictionaries({
    "attribute": st.just(attr),
    "question": st.sampled_from(USER_CASES[attr][0]),
    "answer": st.sampled_from(USER_CASES[attr][1]),
    "distractors": st.just(USER_CASES[attr][2]),
    "value": NAME,
}))


@SETTINGS
@given(c=user_cases)
def test_a_memory_keyed_by_the_asked_attribute_ranks_first(client, tenant, c):
    """Given distractors holding the question's words, and an answer in other words filed
    under the user's key for the attribute
    When asking about that attribute in an everyday phrasing
    Then the answer ranks first, and explain says which attribute raised it.
    Control: the same answer with no key, or under another attribute's key, does not rank
    first (the distractors' words win), and explain shows no raise."""
    h, attr = tenant.headers, c["attribute"]
    answer = c["answer"].format(v=c["value"])
    path = _path()
    keyed = _store(client, h, path, answer, f"user.{attr}", c["value"], c["distractors"])
    got = _search(client, h, c["question"], path)
    assert got[0]["id"] == keyed, _shown(c["question"], got)
    assert got[0]["explain"]["boosts"]["asked_attribute"]["attribute"] == attr

    other = "phone" if attr != "phone" else "laptop"
    for slot in (None, f"user.{other}"):
        path = _path()
        plain = _store(client, h, path, answer, slot, c["value"], c["distractors"])
        got = _search(client, h, c["question"], path)
        assert got[0]["id"] != plain, slot
        assert all("asked_attribute" not in r["explain"]["boosts"] for r in got), slot


person_cases = st.fixed_dictionaries({
    "who": NAME, "other": NAME, "value": NAME,
    "shape": st.sampled_from([
        ("where does {who} live?", "location", "{who} has a place in {v} now",
         ["{who} wants to live by the sea", "{who} and the user talked about where to live"]),
        ("where is {who} based these days?", "location", "{who} got a flat in {v}",
         ["{who} is based on a true story, the user jokes", "These days {who} is tired"]),
        ("what does {who} do for work?", "occupation", "{who} trains people as a {v}",
         ["{who} hates work drinks", "{who} does not work weekends"]),
        ("which school does {who} go to?", "school", "{who} started at {v} Academy",
         ["{who} gets the school bus at 7", "{who} has a school play in May"]),
    ]),
}).filter(lambda c: c["who"] != c["other"])


@SETTINGS
@given(c=person_cases)
def test_a_question_about_someone_raises_that_persons_key(client, tenant, c):
    """Given distractors about a named person holding the question's words, and an answer
    in other words filed under that person's key for the attribute
    When asking about that person's attribute
    Then the answer ranks first. Control: filed under another person's key, or the user's,
    the same answer is not raised and does not rank first."""
    h = tenant.headers
    question, attr, answer, distractors = c["shape"]
    fill = {"who": c["who"], "v": c["value"]}
    question, answer = question.format(**fill), answer.format(**fill)
    distractors = [d.format(**fill) for d in distractors]
    who = c["who"].casefold()
    path = _path()
    keyed = _store(client, h, path, answer, f"person.{who}.{attr}", c["value"], distractors)
    got = _search(client, h, question, path)
    assert got[0]["id"] == keyed, _shown(question, got)
    assert got[0]["explain"]["boosts"]["asked_attribute"]["attribute"] == attr

    for slot in (f"person.{c['other'].casefold()}.{attr}", f"user.{attr}"):
        path = _path()
        plain = _store(client, h, path, answer, slot, c["value"], distractors)
        got = _search(client, h, question, path)
        assert got[0]["id"] != plain, slot
        assert all("asked_attribute" not in r["explain"]["boosts"] for r in got), slot


@given(role=st.sampled_from(["manager", "boss"]),
       phrasing=st.sampled_from(["who is the user's {r}?", "who's my {r} now?",
                                 "who is the {r} of the user?"]))
def test_a_role_of_the_user_is_the_users_attribute(role, phrasing):
    """Given a question about the user's manager (a relation word that is itself one of the
    user's attributes)
    Then ``user.manager`` answers it; control: the manager's own city does not, and a
    question about where the manager lives is answered by the manager's key."""
    question = asked(phrasing.format(r=role))
    assert answers("user.manager", question) == "manager"
    assert answers("person.manager.location", question) is None
    where = asked(f"where does the user's {role} live?")
    assert answers("person.manager.location", where) == "location"
    assert answers("user.location", where) is None


@given(question=st.sampled_from(["what's the weather like?", "any ideas for dinner?",
                                 "summarise the meeting notes"]))
def test_a_question_naming_no_attribute_raises_nothing(question):
    """A question naming no attribute asks nothing: no key answers it (control: the same
    key answers a question about its attribute)."""
    assert not asked(question)
    assert answers("user.location", asked(question)) is None
    assert answers("user.location", asked("where does the user live now?")) == "location"


@given(subject=st.sampled_from(["the user", "Dana", "my brother", "Kofi"]),
       shape=st.sampled_from([
           ("what does {s} do for a living?", "occupation", "location"),
           ("where is {s} living these days?", "location", "occupation"),
           ("who does {s} live with?", None, "location"),
           ("when is {s}'s launch date?", None, "partner"),
           ("is {s} dating anyone?", "partner", "occupation"),
       ]))
def test_the_words_around_an_attribute_word_decide_what_it_asks(subject, shape):
    """"for a living" asks for a job and "living" alone for a place; "lives with" asks
    who, not where; a calendar "date" asks for no partner. Each phrasing asks its attribute
    (if any) and never the one beside it (the control)."""
    phrasing, attribute, not_asked = shape
    question = asked(phrasing.format(s=subject))
    assert not_asked not in question.attributes
    if attribute is None:
        assert not question
    else:
        assert attribute in question.attributes


@given(child=st.sampled_from(["son", "daughter"]), attr=st.sampled_from(["name", "age"]))
def test_the_users_child_is_read_as_the_users_children(child, attr):
    """"the user's daughter's name" is answered by the user's children key or by the
    daughter's own key; control: not by the user's name."""
    question = asked(f"what is the user's {child}'s {attr}?" if attr == "name"
                     else f"how old is the user's {child}?")
    assert answers(f"person.{child}.{attr}", question) == attr
    assert answers("user.name", question) is None
    if attr == "name":
        assert answers("user.children:mia", question) == "children"
