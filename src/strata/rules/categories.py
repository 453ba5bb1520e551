"""Which sensitive categories a statement touches: a small deterministic classifier for
memory rules' ``exclude`` and ``include`` (``strata.rules``).

Each category is a vocabulary of lemmas and short lemma phrases (simplemma, as
``strata.write.lexical`` uses it), matched against the statement's lemmas, so "diagnosed",
"diagnosis" and "diagnoses" all count. The lists are written to cover the category broadly
(conditions, treatments, care; money held, owed, earned and spent; ...), not to fit given
sentences; a model can do better, but a rule must decide the same way on every entry point
and without a network call, so this runs in the write path. ``credentials`` also counts
anything ``strata.rules.secrets`` finds.

A miss lets a memory through, a false hit keeps one out: both are visible on the receipt or
the create result, which names the rule that decided.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, get_args

Category = Literal["health", "credentials", "finances", "other_people", "location"]
CATEGORIES: tuple[str, ...] = get_args(Category)


def _vocab(text: str) -> tuple[frozenset[str], tuple[tuple[str, ...], ...]]:
    """Single words and multi-word phrases (written with spaces) of one category."""
    words, phrases = set(), []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        parts = tuple(entry.split())
        if len(parts) == 1:
            words.add(parts[0])
        else:
            phrases.append(parts)
    return frozenset(words), tuple(phrases)


_VOCABULARY: dict[str, tuple[frozenset[str], tuple[tuple[str, ...], ...]]] = {
    "health": _vocab("""
        health, healthy, unhealthy, ill, illness, sick, sickness, disease, disorder, condition,
        syndrome, symptom, diagnose, diagnosis, diagnosed, chronic, infection, infect, virus,
        flu, covid, fever, cancer, tumor, tumour, chemo, chemotherapy, radiation, diabetes,
        diabetic, insulin, asthma, asthmatic, inhaler, allergy, allergic, intolerance,
        intolerant, celiac, coeliac, epilepsy, epileptic, seizure, migraine, arthritis,
        hypertension, cholesterol, stroke, dementia, alzheimer, parkinson, autism, autistic,
        adhd, dyslexia, dyslexic, depression, depressed, anxiety, anxious, panic, bipolar,
        schizophrenia, ptsd, ocd, eating disorder, anorexia, bulimia, insomnia, therapy,
        therapist, psychiatrist, psychologist, counselling, counseling, mental health,
        medication, medicine, meds, prescription, prescribe, pill, antidepressant, dose,
        dosage, vaccine, vaccinate, vaccination, doctor, physician, gp, nurse, clinic,
        hospital, hospitalize, hospitalise, surgery, surgeon, operation, appointment with,
        injury, injure, fracture, broken leg, broken arm, sprain, pain, ache, headache,
        backache, pregnant, pregnancy, miscarriage, ivf, fertility, hiv, std, blood pressure,
        blood test, heart attack, heart condition, disability, disabled, wheelchair, blind,
        deaf, rehab, addiction, addict, alcoholic, sober, sobriety, overweight, obese,
        obesity, weight loss, physiotherapy, physio, dentist, dental, optician, mri, x-ray,
        scan, biopsy, hearing aid, health insurance
    """),
    "credentials": _vocab("""
        password, passwd, passcode, passphrase, pin, login, log-in, username, user name,
        credential, credentials, token, api key, secret key, access key, private key,
        ssh key, recovery code, backup code, security question, 2fa, otp, one-time code,
        verification code, seed phrase, mnemonic, wifi password, account number, routing
        number, sort code, iban, swift, card number, cvv, cvc, social security, ssn,
        passport number, licence number, license number
    """),
    "finances": _vocab("""
        money, finance, finances, financial, salary, wage, wages, income, earn, earnings,
        pay, paid, payslip, paycheck, paycheque, bonus, raise, bank, banking, account
        balance, savings, save money, saving for, budget, debt, owe, loan, mortgage, rent,
        lease, credit, credit card, debit card, overdraft, invest, investment, investor,
        portfolio, stock, stocks, share price, shares, bond, fund, etf, crypto,
        cryptocurrency, bitcoin, ethereum, pension, retirement fund, 401k, ira, tax, taxes,
        irs, hmrc, inheritance, net worth, wealth, rich, bankrupt, bankruptcy,
        afford, expense, expenses, spend, spending, bill, bills, invoice, price, cost, fee,
        dollar, dollars, euro, euros, pound, pounds, usd, eur, gbp, $, €, £, insurance
        premium, financial advisor, accountant
    """),
    "other_people": _vocab("""
        wife, husband, spouse, partner, girlfriend, boyfriend, fiance, fiancee, ex,
        mother, mom, mum, father, dad, parent, parents, son, daughter, child, children,
        kid, kids, baby, brother, sister, sibling, grandmother, grandma, grandfather,
        grandpa, grandparent, aunt, uncle, cousin, nephew, niece, in-law, family,
        friend, friends, best friend, roommate, flatmate, housemate, neighbour, neighbor,
        colleague, coworker, co-worker, boss, manager, teammate, employee, client,
        classmate, teacher, he, she, him, her, his, hers, they, them, their, someone,
        somebody, people
    """),
    "location": _vocab("""
        live in, lives in, living in, live at, based in, located in, location, move to,
        moved to, moving to, relocate, relocated, relocating, address, home address,
        street, avenue, road, apartment, flat, house number, postcode, postal code,
        zip code, zip, city, town, village, country, neighbourhood, neighborhood,
        district, suburb, hometown, home town, from, born in, grew up in, gps, coordinates,
        latitude, longitude, nearby, near, commute, commuting, currently in, staying in,
        staying at, travel to, travelling to, traveling to, flight to, hotel, trip to
    """),
}
# Pronouns and "from"/"near" are broad on purpose for exclusion (a rule that keeps other
# people out should rather over-exclude); they are never enough for ``include`` on their
# own, which needs a word of substance (see ``_WEAK``).
_WEAK = frozenset({"he", "she", "him", "her", "his", "hers", "they", "them", "their",
                   "someone", "somebody", "people", "from", "near", "nearby", "pay", "paid",
                   "cost", "price", "flat", "condition", "operation", "scan", "pain"})

_TOKEN = re.compile(r"[$€£]|[a-z0-9]+(?:[-'][a-z0-9]+)*")


@lru_cache(maxsize=65536)
def _lemma(word: str) -> str:
    import simplemma  # on first use: 0.1 s of a cold start (strata.write.lexical says so)

    return simplemma.lemmatize(word, lang="en", low_memory=True).casefold()


def _forms(text: str) -> list[tuple[str, str]]:
    """Each token of ``text`` as (word, lemma)."""
    return [(w, _lemma(w) if w[0].isalpha() else w)
            for w in _TOKEN.findall(text.casefold().replace("\u2019", "'"))]


def _hits(forms: list[tuple[str, str]], category: str) -> set[str]:
    """The vocabulary entries of ``category`` the statement holds."""
    words, phrases = _VOCABULARY[category]
    found = {e for w, lemma in forms for e in (w, lemma) if e in words}
    seq_words = [w for w, _ in forms]
    seq_lemmas = [lemma for _, lemma in forms]
    for phrase in phrases:
        n = len(phrase)
        for seq in (seq_words, seq_lemmas):
            if any(tuple(seq[i:i + n]) == phrase for i in range(len(seq) - n + 1)):
                found.add(" ".join(phrase))
    return found


def classify(text: str, *, strong_only: bool = False) -> list[str]:
    """The categories ``text`` touches, in ``CATEGORIES`` order. ``strong_only``: ignore the
    broad words (pronouns, "from", "pay") that only exclusion counts."""
    from strata.rules import secrets

    forms = _forms(text)
    out = []
    for category in CATEGORIES:
        hits = _hits(forms, category)
        if strong_only:
            hits -= _WEAK
        if hits or (category == "credentials" and secrets.contains_secret(text)):
            out.append(category)
    return out
