"""Domain-independent language machinery shared by every mapper: clauses, hedges, polarity, numbers, keep.

Nothing here knows a product domain; the interface (components, attribute words, macros) lives in the
spec. The flat baseline uses exactly this machinery over raw parameter names.
"""
from __future__ import annotations

import re

from .precision import CHANGE_VERB, NUMBER, UNITS, WORD_NUMBERS, Quantity, quantity, spell_out, us_units  # noqa: F401  (re-exported)
from .coverage import COUNT_WORDS, UNSUPPORTED  # noqa: F401  (re-exported)
from .scope import KEEP, KEEP_LEAD, is_keep  # noqa: F401  (re-exported)
from .intensity import HEDGES, MAGNITUDES, find_phrase, magnitude  # noqa: F401  (re-exported)
from .reference import INCLUDED, SAME_AMOUNT, same_amount  # noqa: F401  (re-exported)
from .dimensions import OVERALL, SPAN_ONLY
from .framing import unframe
from .goals import place_reasons, resolve as resolve_goals
from .register import engineering, history
from .shorthand import shorthand
from .requests import after_question, polite, reports

POSITIVE = ("more", "increase", "increased", "raise", "raised", "bigger", "larger", "taller", "higher", "longer",
            "wider", "thicker", "deeper", "grow", "extend", "enlarge", "boost", "lift", "up", "add", "heavier",
            "broader", "greater", "expand", "stretch", "lengthen", "widen", "thicken", "heighten", "bulkier",
            "fatter", "chunkier", "beefier", "stronger", "sturdier", "bolder", "deepen", "broaden", "further",
            "farther", "roomier", "curvier", "plumper", "bulkier", "chubbier", "widens", "widening")
# "closer to the floor", "nearer the table": less distance; "squatter": less height
NEGATIVE = ("less", "decrease", "decreased", "reduce", "reduced", "lower", "lowered", "smaller", "shorter",
            "narrower", "thinner", "shallower", "shrink", "cut", "trim", "down", "slimmer", "remove", "lighter",
            "tighter", "tighten", "pinch", "skinnier", "shorten", "narrow", "thin", "slim", "lessen", "minimise", "minimize",
            "compact", "tone down", "fewer", "drop", "delete", "without", "closer", "nearer", "squatter", "squat",
            "flatter", "stubbier", "stumpier", "narrows", "narrowing", "chop", "lop")

ADD = re.compile(r"\b(add|attach|give|put|include|fit|want|like|need|have|with|bring back)\b")
REMOVE = re.compile(r"\b(remove|take off|take away|get rid of|drop|delete|lose|ditch|without|no)\b")

SPLIT = re.compile(r"\s*(?:[,;!?]|:(?!\s*[-−+]?\d)|\.(?!\d)|\bbut\b|\band then\b|\band\b(?! a half)(?! no (?:more|less)\b)|\bwhile\b|\bplus\b(?!\s*\d)|\balso\b|\bthen\b|"
                   r"(?<=\w)(?= with\b(?! (?:the |its |their )?same\b)(?! (?:it|them)\s*(?:$|[,;.!?]))))\s*")

STOPWORDS = set("""a an the it its it's this that these those of to for on in at with by from please make
    let can could would you i we me my our be is are was were been get got give them they their there
    so just some bit little touch tad way much very really lot more less too also then same as""".split())


def normalise(text: str) -> str:
    t = text.lower().replace("’", "'").replace("–", "-")
    t = re.sub(r"\s*[ø⌀]\s*(?=\d)", " diameter ", t)  # "a base of Ø 24 cm": the diameter sign (eighth round)
    t = re.sub(r"\s+", " ", t).strip()
    # eleventh round: the engineering register ("w 50, d 40 (all cm)", "T -5 mm", "neck → 5", "± 0", "x1.25") in
    # words, corrections inside one sentence ("38 cm, no wait, 41 cm") resolved to the last value, and comparisons with
    # the current build ("1 cm up from the current value") dropped
    # thirteenth round: shorthand and dictation ("seat ht 46 / seat w 48", "40mm dia", "heigth", "four point five")
    t = history(engineering(us_units(shorthand(t))))  # (twelfth round: "12 fl oz", "fluid ounces")
    # twelfth round: a polite frame is the request itself; a report another sentence's request answers, and a statement
    # after a question that asked for a change, only explain it
    t = after_question(reports(polite(t)))
    t = ROLE.sub("", t)  # ninth round: who or where the words come from is no part of the edit
    t = unframe(t)  # tenth round: a viewpoint, a scene-setting comparison, list markers
    t = place_reasons(t)  # twelfth round: a place's statement before a request with its own amount is its reason
    t = resolve_goals(t)  # tenth round: a sized place the product must fit is a reference measure
    # ninth round: "five legs instead of four": the count it replaces is the present state, not a second count
    t = re.sub(r",?\s*\b(?:instead of|rather than|in place of|not) (?:the )?(?:current |present |usual |existing )?"
               r"(?:\d+|one|two|three|four|five|six|seven|eight)\b(?! ?(?:[a-z]+ )?(?:mm|cm|in|inch|inches|°|deg|degrees|ml|%))",
               "", t)
    t = re.sub(r"\bapiece\b", "each", t)  # ninth round: "1 cm taller apiece"
    # ninth round: a parenthetical gloss without an amount ("(top over bottom)") restates, it does not edit
    t = re.sub(r"\s*\((?![^()]*\d)[^()]*\)", "", t)
    # eleventh round: "a chunky post of a leg instead of the skinny dowels": what it replaces is the present state
    t = re.sub(r",?\s*\b(?:instead of|rather than|in place of) (?:the|a|an|its|their|that|this|those|these) "
               r"(?![^,;.!?]*\d)[^,;.!?]*", "", t)
    t = _reasons(t)
    return re.sub(r"\s+", " ", t).strip()


# eleventh round: a reason after an edit with its own amount ("shade 2 cm shorter, so it fits under the hood of the
# cooker", "25 cm for the fridge door", "2 cm lower so that the kids' feet touch the floor") explains the amount; it names no part
# to edit. Not a reason: "for" and one noun ("27 cm for the bottle": the product itself), the whole ("… for the
# chair overall"), one with an amount, a direction, a keep or a comparison of its own ("…, so it is 3 cm
# lower", "so the overall height stays", "so that it matches the top").
REASON = re.compile(r"(?P<lead>\s*,?\s*)\b(?:so(?: that)?|for) (?:(?:the|a|an|my|our|your|their|this|that|it|they|"
                    r"two|both|one|we|you|people|he|she|i|everything|all)\b)[^,;.!?]*")
# "capacity 400 ml, same as the cans in the vending rack": what the amount is borrowed from
SAME_AS = re.compile(r"\s*,\s*(?:just |exactly )?(?:the )?same as (?:the|a|an|our|your|their|those|these|other) "
                     r"(?!(?:current|present|existing|previous|last|old|original)\b)[^,;.!?]*")


def _reasons(text: str) -> str:
    def pass_(t: str, pat: re.Pattern, same: bool) -> str:
        def drop(m):
            tail, before = m.group(0), t[:m.start()]
            clause_start = max([x.end() for x in re.finditer(r"[;!?]|\.(?!\d)", before)], default=0)
            if not re.search(r"\d", before[clause_start:]) or re.search(r"\d", tail) or polarity(tail) \
                    or OVERALL.search(tail) or re.fullmatch(r"\s*,?\s*for \S+ [a-z'-]+\s*", tail) or (
                    not same and (_is_keep(tail) or re.search(r"\bmatch|\bsame\b|\bas [a-z]+ as\b|\bequal", tail))):
                return tail
            return ""
        return pat.sub(drop, t)
    return pass_(pass_(text, REASON, False), SAME_AS, True)


# ninth round: a role or source before a colon or dash ("tester feedback:", "from the spec sheet —", "shop memo:")
ROLE = re.compile(r"^(?:(?:an?|the|our|my|one|some) )?(?:(?:from|per|re|via) (?:the |a |our )?)?"
                  r"(?:(?:client|customer|user|usability|tester|team|teammate|designer|engineering|workshop|shop|factory|"
                  r"product|marketing|review|design|qa|internal|field|lab) )?"
                  r"(?:feedback|notes?|memo|comments?|requests?|tests?|testing|reviews?|brief|spec(?:ification)?(?: sheet)?|"
                  r"sheet|message|msg|ticket|todo|fyi|remark|observation|finding|says|said|wrote|asks?|wants?)"
                  r"(?: \d+)?\s*(?::|—|-{1,2}(?= ))\s*")


# A separable phrasal verb whose particle carries the meaning: "bring the seat in" (narrower).
PHRASAL = [(re.compile(r"\b(?:bring|pinch|nip|cinch) (the [\w' ]{1,30}?) in\b"), r"narrow \1"),  # (tenth: "pinch")
           # "pull its bottom edge in": a place on a part drawn inwards is narrowed there
           (re.compile(r"\b(?:pull|draw) ((?:the|its|their) (?:[\w']+ )?(?:edge|rim|bottom|top|opening|mouth)) in\b"),
            r"narrow \1"),
           # "pull the bottom radius in by 2 cm", "push the base radius out": a measure across a part drawn in is
           # narrowed, pushed out widened (seventh round)
           (re.compile(r"\b(?:pull|draw|bring|tuck|push) ((?:the|its|their) (?:[\w']+ ){0,2}(?:radius|width|diameter)) "
                       r"in(?:wards?)?\b"), r"narrow \1"),
           (re.compile(r"\b(?:push|pull|draw|bring|let|open|move) ((?:the|its|their) (?:[\w']+ ){0,2}(?:radius|width|diameter)) "
                       r"out(?:wards?)?\b"), r"widen \1"),
           # "the handle should stick 3 cm out": the amount said inside the particle verb goes after it (seventh round)
           (re.compile(r"\b(stick|sticks|sticking|stuck|jut|juts|jutting)\s+((?:about |around )?[-+]?\d+(?:\.\d+)?\s*"
                       r"[a-z°]*)\s+out\b"), r"\1 out \2"),
           (re.compile(r"\btake (the [\w' ]{1,30}?) off\b"), r"take off \1"),  # "take the footrest off": removal
           (re.compile(r"\btake (it|them) (?:off|away|out)\b"), r"remove \1"),  # twelfth round: "so please take it off"
           # "a footrest-less stool": a part named with the suffix "-less" is left out
           (re.compile(r"\b([a-z]{3,})-less\b"), r"without \1"),
           # eighth round: a tripod stands on three legs
           (re.compile(r"\btripod\b"), "three-legged"),
           # tenth round: "somewhere for guests to prop their arms" asks for the rest of that body part (armrests, a footrest)
           (re.compile(r"\b(?:somewhere|something|a place|a spot|places)(?: for [a-z]+)? to (?:rest|put|prop)(?: up)? "
                       r"(?:their|your|his|her|one's|the|my|our) (?:elbows?|arms?|forearms?)\b"), "armrests"),
           (re.compile(r"\b(?:somewhere|something|a place|a spot)(?: for [a-z]+)? to (?:rest|put|prop)(?: up)? "
                       r"(?:their|your|his|her|one's|the|my|our) (?:feet|foot)\b"), "a footrest"),
           # twelfth round: "arms to push themselves up on", "arms to lever oneself out with": armrests asked for
           # through what a user does with them
           (re.compile(r"\barms (?:to|they can|you can|i can|we can) (?:push|pull|lever|lean|rest|prop|hold|grip|brace)"
                       r"(?: (?:themselves|oneself|yourself|himself|herself|myself|ourselves|me|us|them))?"
                       r"(?: up| out| off)?(?: (?:on|onto|against|with|from))?\b"), "armrests"),
           (re.compile(r"\b(?:somewhere|something|a place|a spot)(?: for [a-z]+)? to (?:rest|lean) "
                       r"(?:their|your|his|her|one's|the|my|our) head\b"), "a headrest")]


# "… too low for kids at the counter": who a change is for says nothing about the model (eighth round)
PURPOSE = re.compile(r"\s+for (?:people|users|someone|somebody|anyone|kids|children|adults|folks|guests|sitters|those|"
                     r"whoever)\b(?! to (?:rest|put|prop|lean)\b)(?: [a-z'-]+){0,4}(?=\s*(?:$|[,;.!?]))")


# "raise both the seat and the footrest by 5 cm": the verb and the amount go with each of the two parts.
BOTH = re.compile(r"(?P<verb>(?:^|(?<=[,;]))[^,;]*?)\bboth (?P<a>(?:the |its )?[a-z]+) and "
                  r"(?P<b>(?:the |its )?[a-z]+(?: (?!(?:[a-z]+er|by|to|up|down|more|less|much|a|slightly|way|far)\b)[a-z]+)?)"
                  r"(?P<rest>[^,;]*)")


# eighth round: "legs and seat each 5 mm thicker" (the parts first, then "both" / "each" and the edit), and
# "lengthen the body and the neck by 1 cm each" (the amount shared by "each")
BOTH_AFTER = re.compile(r"(?P<verb>(?:^|(?<=[,;]))\s*)(?P<a>(?:the |its )?[a-z]+) and (?P<b>(?:the |its )?[a-z]+(?: [a-z]+)?) "
                        r"(?:both|each) (?P<rest>[^,;]+)")
EACH = re.compile(r"(?P<verb>(?:^|(?<=[,;]))[^,;]*?)\b(?P<a>(?:the|its|their) [a-z]+) and (?P<b>(?:the|its|their) [a-z]+) "
                  r"(?P<rest>(?:by |up |down )?[^,;]*?\d[^,;]*?) each\b")


# ninth round: "neck and shoulder: 1 cm taller each": the parts named as a heading, the edit after the colon
HEADED_EACH = re.compile(r"(?P<verb>(?:^|(?<=[,;]))\s*)(?P<a>(?:the |its )?[a-z]+) and (?P<b>(?:the |its )?[a-z]+)\s*[:,]\s*"
                         r"(?P<rest>[^,;:]+?)\s+(?:each|both)\b")


def _both(text: str) -> str:
    def dist(m):
        verb, rest = m.group("verb").strip(), m.group("rest").rstrip()
        return " and ".join(" ".join(f"{verb} {p}{rest}".split()) for p in (m.group("a"), m.group("b")))

    def dist_after(m):
        rest = " " + m.group("rest").rstrip()
        return m.group("verb") + " and ".join(" ".join(f"{p}{rest}".split()) for p in (m.group("a"), m.group("b")))

    def dist_each(m):
        verb, rest = m.group("verb").strip(), " " + m.group("rest").strip()
        return " and ".join(" ".join(f"{verb} {p}{rest}".split()) for p in (m.group("a"), m.group("b")))
    text = HEADED_EACH.sub(dist_after, text)
    return EACH.sub(dist_each, BOTH_AFTER.sub(dist_after, BOTH.sub(dist, text)))


# "bottom of the shade: radius down by 1 cm": a heading before a colon names the part (and the place on it) that what
# follows edits — one clause, not two (seventh round). A heading is a short noun phrase: no number, no direction,
# no keep word ("seat depth: +2 cm" was never split: a number follows the colon).
HEADING = re.compile(r"(?:^|(?<=[,;.!?]))(?P<h>\s*[a-z][a-z' ]{1,40}?)\s*:\s*(?=[a-z])")


def _headings(text: str) -> str:
    def join(m):
        h = m.group("h")
        if len(h.split()) > 5 or polarity(h) or is_keep(h) or re.search(r"\b(?:and|but|then)\b", h):
            return m.group(0)
        return h + " "
    return HEADING.sub(join, text)


# "47 cm wide x 43 cm deep": two measures of one part, each its own clause (eighth round)
BY_MEASURE = re.compile(r"(\d(?:\.\d+)?\s*[a-z°\"]*\s+(?:wide|tall|high|deep|long|thick|across))\s+(?:by|x|×)\s+(?=\d)")
# "reduce the base 1 cm in radius and 5 mm in height": an amount in a measure alone shares the verb of change before it
AMOUNT_IN = re.compile(r"[-+]?\d+(?:\.\d+)?\s*[a-z°\"]*\s+in (?:height|width|depth|radius|diameter|thickness|length)")


def clauses(text: str) -> list[str]:
    """Split an instruction into edit clauses ("taller and more reclined, keep the seat"); a trailing
    "without touching X" / "keep X" becomes a clause of its own; "X included" / "including X" makes a measure
    overall; "by the same amount" repeats the previous clause's amount."""
    out = []
    text = _headings(PURPOSE.sub("", normalise(text)))
    for p in SPLIT.split(BY_MEASURE.sub(r"\1, ", _both(INCLUDED.sub(" overall ", text)))):
        p = p.strip()
        if out and SPAN_ONLY.fullmatch(p):  # "…, floor to top of backrest": how the previous measure is taken
            out[-1] = f"{out[-1]} {p}"
            continue
        if out and AMOUNT_IN.fullmatch(p) and (v := re.match(r"[a-z]+", out[-1])) and CHANGE_VERB.fullmatch(v.group(0)) \
                and AMOUNT_IN.search(out[-1]):
            p = f"{v.group(0)} {p}"  # "…, 5 mm in height": reduced too
        for pat, sub in PHRASAL:
            p = pat.sub(sub, p)
        m = KEEP_LEAD.search(p)
        dash = re.search(r"\s+(?:—|-{1,2})\s+", p)
        if dash and _is_keep(p[dash.end():]) and not _is_keep(p[:dash.start()]):
            out += [p[:dash.start()].strip(), p[dash.end():].strip()]  # "seat down 5 cm — the ring stays" (ninth round)
        elif m and m.start() > 0:
            out += [p[:m.start()].strip(), p[m.start():].strip()]
        else:
            out.append(p)
    out = _each_degree([p for p in out if p and re.search(r"[a-z0-9]", p)])
    return same_amount(out)


# tenth round: "wider seat, deeper seat, taller backrest, all just a little": a degree said once for every edit of the
# list before it
EACH_DEGREE = re.compile(r"(?:and )?(?:each|all|both|every one|each one|all of them|each of them|all three|all two)"
                         r"(?: of them)?\s+(?:just |only |by )?(?P<h>[a-z ]+)")


def _each_degree(parts: list[str]) -> list[str]:
    if len(parts) > 2 and (m := EACH_DEGREE.fullmatch(parts[-1])) and magnitude(m.group("h"))[1] \
            and polarity(parts[-1]) is None and quantity(parts[-1]) is None:
        return [f"{p} {m.group('h')}" if polarity(p) and not is_keep(p) else p for p in parts[:-1]]
    return parts


def polarity(clause: str) -> str | None:
    """'+' or '-' from generic comparatives (whichever occurs first), None when there is none."""
    pos = find_phrase(clause, POSITIVE)
    neg = find_phrase(clause, NEGATIVE)
    if pos and neg:
        return "+" if pos[1] < neg[1] else "-"
    return "+" if pos else "-" if neg else None


def content_runs(clause: str, extra_stop: set[str] = frozenset(), keep: set[str] = frozenset()) -> list[str]:
    """Maximal runs of content words (split at stopwords, hedges, numbers): candidate mentions."""
    words = re.findall(r"[a-z][a-z'-]*|\d+(?:\.\d+)?", clause)
    hedge_words = {w for ws in HEDGES.values() for h in ws for w in h.split()}
    stop = (STOPWORDS | hedge_words | extra_stop | set(UNITS)) - set(keep)
    runs, cur = [], []
    for w in words:
        if w in stop or w[0].isdigit():
            if cur:
                runs.append(" ".join(cur))
            cur = []
        else:
            cur.append(w)
    if cur:
        runs.append(" ".join(cur))
    return runs


# Non-English input: scripts other than Latin, accented Latin letters, and function words of the languages a
# designer most often mixes in (a clear refusal beats a silent mis-reading).
FOREIGN_WORDS = {"el", "los", "las", "más", "menos", "muy", "und", "der", "die", "das", "mit", "ein", "eine", "nicht",
                 "sehr", "höher", "les", "des", "très", "avec", "pour", "sur", "une", "del", "più", "molto", "della",
                 "het", "een", "niet", "hacer", "haz", "hazlo", "machen", "mach", "rends", "fais", "rendre", "plus",
                 "alto", "alta", "bajo", "ancho", "grande", "haut", "hoch", "breiter", "asiento", "respaldo",
                 "sedia", "stuhl", "chaise", "lampe", "tasse", "taza", "botella", "flasche", "bouteille", "por",
                 "favor", "bitte", "poco", "peu", "etwas", "la", "le", "il", "lo", "du", "au", "aux", "et", "y"}
NON_LATIN = re.compile(r"[^\x00-\x7f\u00b0\u00b2\u00b3\u00bc-\u00be\u00d7\u2018-\u201f\u2013\u2014\u2026\u2032\u2033"
                       r"\u00c0-\u024f]")
ACCENTED = re.compile(r"[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f]")


def not_english(text: str) -> str | None:
    """Why an instruction is not (only) English, or None. Checked before mapping; the model stays as it was."""
    t = normalise(text)
    odd = sorted(set(NON_LATIN.findall(t)))
    words = re.findall(r"[^\W\d_]+", t)
    foreign = [w for w in words if w in FOREIGN_WORDS or ACCENTED.search(w)]
    if odd:
        return "only English instructions are understood; this one has characters of another script (" + \
               "".join(odd[:8]) + ")"
    if foreign and (len(foreign) >= 2 or any(ACCENTED.search(w) for w in foreign)):
        kind = "mixed-language" if len(foreign) < len(words) else "non-English"
        return f"only English instructions are understood; this {kind} one has: " + \
               ", ".join(f"“{w}”" for w in dict.fromkeys(foreign))
    return None


def _is_keep(clause: str) -> bool:
    from .scope import is_keep

    return is_keep(clause)
