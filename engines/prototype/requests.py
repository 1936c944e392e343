"""Requests that come from outside the design team (twelfth round): who reports a problem, how politely the change is
asked for, and what the report only explains.

* A report — a ticket, a review, feedback, or people saying, writing, asking for or habitually doing something
  ("ticket #12: …", "store feedback says …", "a buyer writes that …", "shoppers keep bumping into …") — is the reason
  for a request said in another sentence of the instruction; it is dropped when that request names what it edits
  (no "it" / "them" to resolve) or comes first. Alone, only its lead is dropped: "a reviewer asks for a taller cap"
  asks for a taller cap.
* A polite indirect request is the request: "would it be possible to lower …", "could we perhaps widen …", "would it
  be possible for it to hold …" (make it hold …), "is there any chance you could …".
* A statement after a question that asked for a change explains it ("could the seat be 2 cm lower? The kids' feet
  dangle."): dropped.

``language.normalise`` applies these before an instruction is split into clauses. Nothing here knows a product.
"""
from __future__ import annotations

import re

# who speaks: people outside the design team (with up to three words before them: "a 6 ft 4 customer", "US buyers")
_PEOPLE = (r"(?:customers?|clients?|reviewers?|reviews|buyers?|shoppers?|users?|parents?|owners?|retailers?|"
           r"stockists?|dealers?|guests?|visitors?|patients?|residents?|diners?|staff|people|folks|somebody|someone|"
           r"kids|children|families|students|patrons|fans|teachers|nurses|carers|"
           r"testers?|marketing|sales|support|the shop floor|our (?:shop|store|café|cafe|bar)s?)")
_DET = r"(?:(?:an?|the|our|some|many|several|two|three|a few|a couple of|most|lots of|one of (?:the|our)) )?"
_SAYS = (r"(?:says?|said|writes?|wrote|reports?|reported|tells? us|told us|mentions?|mentioned|notes?|noted|"
         r"complains?|complained|comments?|commented|points? out|pointed out|is saying|are saying|feels?|felt|finds?|"
         r"found|thinks?|claims?)(?: that)?")
_ASKS = r"(?:asks?|asked|are asking|is asking|keep asking|requests?|requested|wants?|wanted|would like|need|needs)(?: for)?"
# "ticket #4471:", "support ticket:", "store feedback says", "customer review:"
_LABEL = (r"(?:(?:support|bug|service|help ?desk|customer|client|user|retail|store|shop|dealer|sales|field|return|"
          r"warranty|online|app|amazon|product)\s+)?(?:ticket|report|review|feedback|complaint|comment|note|email|"
          r"e-mail|message|survey|return reason)s?(?:\s*(?:#|no\.?|number)?\s*\d+)?")
# (after a label only a verb that cannot be a noun: "review notes — stem: -4 cm" is a heading of notes, not a report)
LABEL_LEAD = re.compile(r"^" + _DET + _LABEL + r"(?:\s*(?::|—|-{1,2}(?= ))\s*|\s+(?:says|said|writes|wrote|reports|"
                        r"reported|mentions|mentioned|complains|complained|tells us|told us|points out)(?: that)?\s+)")
SAYS_LEAD = re.compile(r"^" + _DET + r"(?:[\w'-]+ ){0,3}?" + _PEOPLE + r"(?: (?:with|in|on|from|at) [\w' -]{1,30}?)? "
                       + _SAYS + r"\s+")
ASKS_LEAD = re.compile(r"^" + _DET + r"(?:[\w'-]+ ){0,3}?" + _PEOPLE + r"(?: (?:with|in|on|from|at) [\w' -]{1,30}?)? "
                       + _ASKS + r"\s+(?!to\b)")
# "shoppers keep bumping into the ring": something people habitually do is a report, not a keep
HABIT = re.compile(r"^" + _DET + r"(?:[\w'-]+ ){0,3}?" + _PEOPLE + r" (?:keep|keeps|kept|always|often|constantly|"
                   r"regularly) (?=[a-z]+ing\b|[a-z]+)")

# "would it be possible to …", "could we perhaps …", "is there any chance you could …": the request itself
POLITE = re.compile(r"(?:^|(?<=[.;!?] ))(?:(?:i|we) (?:was|were) wondering (?:if|whether) |"
                    r"(?:would|could|might) it be possible (?:to |for (?:it|them|us|you) to |that we )|"
                    r"is (?:it|there any chance|there a way) (?:possible )?(?:to |that |for (?:it|them) to |(?=we |you ))|"
                    r"(?:could|can|would|might) (?:we|you|i) (?:perhaps |maybe |possibly |please |kindly )+|"
                    r"(?:do you think )?(?:we|you) could (?:perhaps |maybe |possibly )?)")

_SENT = re.compile(r"(?<=[.!?;])\s+|(?<=[.!?;])$")
_PRONOUN = re.compile(r"\b(?:it|its|them|they|their|this|that one|these|those)\b")
_REQUEST = re.compile(r"\d|\bplease\b|\b(?:make|set|raise|lower|reduce|increase|add|remove|take|bring|move|give|cut|"
                      r"trim|widen|narrow|lengthen|shorten|thicken|slim|drop|lift|put|change|keep|scale|round|shrink|"
                      r"grow|extend|tilt|recline|angle|splay|tuck|push|pull|should|must|has to|have to|needs? to|"
                      r"could|would|can)\b")


# "cut the recline to 5 degrees": a request that names only a measure leaves its part to the report ("reviews say the back
# leans too far"), which then stays (its lead dropped) for the complaint to name the part
ATTRIBUTE_ONLY = re.compile(r"^(?:please )?(?:[a-z]+ )?(?:the|its|their) (?:recline|tilt|splay|angle|lean|height|width|"
                            r"depth|radius|diameter|thickness|capacity|size|span|reach|volume|length|taper)\b")


def _lead(sentence: str) -> re.Match | None:
    return LABEL_LEAD.match(sentence) or SAYS_LEAD.match(sentence) or ASKS_LEAD.match(sentence) or HABIT.match(sentence)


def _habit(sentence: str) -> str:
    """"shoppers keep bumping into the ring": the habit's "keep" is no keep of a part."""
    m = HABIT.match(sentence)
    return m.group(0).rsplit(" ", 2)[0] + " " + sentence[m.end():] if m and re.search(r"\b(?:keeps?|kept)\s*$", m.group(0)) \
        else sentence


def _unlead(sentence: str) -> str:
    """The report's lead dropped: what people ask for is wanted ("customers ask for a taller cap": we want a taller
    cap); what they say is the complaint."""
    if HABIT.match(sentence):
        return sentence
    if m := ASKS_LEAD.match(sentence):
        return "we want " + sentence[m.end():] if m.end() < len(sentence) else sentence
    m = LABEL_LEAD.match(sentence) or SAYS_LEAD.match(sentence)
    return sentence[m.end():] if m and m.end() < len(sentence) else sentence


def _is_report(sentence: str) -> bool:
    return bool(LABEL_LEAD.match(sentence) or SAYS_LEAD.match(sentence) or HABIT.match(sentence))


def polite(text: str) -> str:
    """The polite frame of an indirect request dropped ("would it be possible for it to hold …": make it hold …)."""
    def sub(m):
        return "make it " if re.search(r"for (?:it|them) to $", m.group(0)) else ""
    return POLITE.sub(sub, text)


def reports(text: str) -> str:
    """The instruction without the reports that another sentence's request answers (see the module)."""
    parts = [p for p in _SENT.split(text) if p is not None]
    sents = [p for p in parts if p.strip()]
    if len(sents) < 2:
        return _habit(_unlead(text)) if sents else text  # alone, the report's lead only: "a reviewer asks for …"
    out = []
    for i, s in enumerate(sents):
        others = [o for j, o in enumerate(sents) if j != i and not _is_report(o)]
        if _is_report(s) and others:
            later = [o for o in sents[i + 1:] if not _is_report(o)]
            earlier = [o for o in sents[:i] if not _is_report(o)]
            # the request names its own part (nothing to resolve from the report), or it came first
            if (later and _REQUEST.search(later[0]) and not _PRONOUN.search(later[0])
                    and not ATTRIBUTE_ONLY.match(later[0])) or \
                    (earlier and _REQUEST.search(earlier[-1])):
                continue
        out.append(_habit(_unlead(s)))
    return " ".join(out)


def after_question(text: str) -> str:
    """A statement after a question that asked for a change with an amount explains it: dropped."""
    m = re.search(r"\?\s+", text)
    if not m or not _REQUEST.search(text[:m.start()]):
        return text
    rest = text[m.end():]
    if re.search(r"\d|\bplease\b|\b(?:and|also|then|plus|too|has to|have to|must|should|needs? to|stays?|keep|"
                 r"unchanged|untouched|as (?:it|they) (?:is|are)|same|fixed|alone|remains?)\b", rest) or re.match(
            r"(?:make|set|raise|lower|reduce|increase|add|remove|take|bring|move|give|cut|trim|widen|narrow|keep|"
            r"could|would|can|will|shall)\b", rest):
        return text
    return text[:m.start()] + "."
