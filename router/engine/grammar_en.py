"""The English grammar: the words the router reads English turns with.

Everything a turn may say that is not a value or free text has to be here, in the catalogue's own
words, or in the vocabulary file: a word none of them knows makes the turn unread (a typo one edit
away from a single known word is read as that word). Lists are words separated by white space, `_`
joining the words of a phrase. Verbs are listed by their base form; the third person and `-ing`
form are made from it, and their past forms are listed (a past is never an action: "refunded" is a
state an order is in, not a request to refund).
"""

from __future__ import annotations

import re

from .lexicon import READ, SEND, WRITE, Entry, Lexicon, items

LANGUAGE = "en"

FUNCTION = """
a an the this that these those it its it's itself them they their theirs there here
i me my mine myself we us our ours you your yours u ur ya yourself he him his she her hers
of for on in at to from with without by about into onto over under up down out off as per via
and or but so then than also too either neither nor both plus n &
is are was were be been being am isnt arent wasnt isn't aren't wasn't weren't
do does did done doing have has had having got
what which who whom whose when where
just only even still yet already again now right asap soon quick quickly real really
pls plz please kindly thanks thank thx ty cheers hi hey hello yo ok okay alright hmm um uh
some any each other another such same own more less lot lots much many few
if whether
go ahead sir madam mate guys folks dear buddy
one ones thing things stuff something anything
current latest last first next previous recent new
like i'd i'll i'm i've we'd we'll we're we've you'd you'll you're you've it'll im ive
there's here's that's what's whats where's who's how's thats heres theres
will would shall should may might must can could
bit little moment second sec minute time
currently actually basically maybe perhaps probably definitely exactly
info information details detail status_update
tell tell_me know let_me_know
again yet please_and_thank_you thank_you thanks_a_lot
is_there are_there any_chance
since until till before after between during within
on_file going goes went gone happening happened full whole entire partial
say says said because cause bc through thru copy copies
quick_question just_wondering wondering curious btw by_the_way newest most_recent recently
working_on work_on works_on in_charge_of responsible_for
"""
# Everyday words around a request -- greetings, thanks, sign-offs, apologies, filler -- read as
# what they are: nothing. Phrases, so that a word of them alone ("nice", "well", "bother") stays
# unknown. An organisation's own words go in its vocabulary file (see `vocabulary`).
COURTESY = """
good_morning good_afternoon good_evening good_night good_day gm hi_there hello_there hey_there
hiya howdy greetings hi_team hello_team hey_team hi_all hello_all hey_all
hope_you're_well hope_you_are_well hope_you're_doing_well hope_you_are_doing_well
hope_all_is_well hope_this_finds_you_well hope_you're_having_a_good_day hope_your_day_is_going_well
hope_you_had_a_good_weekend hope_you_had_a_great_weekend hope_you_had_a_nice_weekend
happy_monday happy_friday
how_are_you how_are_u how_r_u how's_it_going how_is_it_going how_are_things how_are_you_doing
sorry sorry_to_bother_you sorry_to_bother sorry_for_the_trouble sorry_to_ask apologies
excuse_me pardon_me
in_advance thanks_in_advance thank_you_in_advance thx_in_advance many_thanks thanks_so_much
thank_you_so_much thank_you_very_much thanks_very_much thanks_again much_appreciated
thanks_a_million thanks_a_bunch thanks_heaps thanks_loads
appreciate_it i_appreciate_it i'd_appreciate_it appreciated
have_a_nice_day have_a_good_day have_a_great_day have_a_good_one have_a_nice_one
regards best_regards kind_regards warm_regards best_wishes all_the_best take_care
great awesome perfect cool lovely wonderful brilliant
when_you_get_a_chance when_you_can when_you_have_a_moment if_you_can if_possible
at_your_convenience no_rush no_hurry quick_favor quick_favour a_favor a_favour do_me_a_favor
changed_their_mind changed_his_mind changed_her_mind changed_my_mind change_of_mind
back_to possibly would_you_mind do_you_mind thanks_for_the_help thanks_for_your_help
thank_you_for_your_help came_in come_in coming_in have_come_in
"""
# Greetings that are nothing only before the request starts ("morning! show order 4411"); later
# in a turn they may say when ("orders from this morning") and are not read.
HEAD_COURTESY = "morning afternoon evening"
# A light verb with a particle later in the request that makes it an action: "give the customer
# $20 back" refunds. verb forms: (particle words, the action).
PARTICLE_VERBS = {
    "give gives giving want wants get gets put puts": (("back", "refund"),),
    "send sends sending": (("back", "send"),),
}
# Numbers written as words ("the last five emails", "ten dollars"); "one" is left out, it is a
# word of its own ("the one at site north").
NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "hundred": 100,
}  # fmt: skip
MONEY_WORDS = "dollars dollar bucks usd"
DETERMINERS = "the a an this that these those my our your his her their its some any each every"
MODALS = """
please pls plz kindly can could would will you u i we need needs want wants wanna
would_like i'd_like let lets let's gotta have_to help go_ahead_and try able can_you could_you
would_you will_you i_need i_want we_need i_would_like
"""
NEGATIONS = """
stop halt not don't dont doesn't doesnt didn't didnt never no nope cannot can't cant won't wont
shouldn't shouldnt mustn't mustnt avoid
do_not does_not did_not can_not will_not should_not must_not
"""
QUESTIONS = """
how_do_i how_can_i how_do_we how_can_we how_to how_does how_would_i how_should_i how_do_you
why why_is why_was why_did what_happens is_it_possible am_i_able what_is_the_policy
what's_the_policy explain meaning what_does
how_do how_can how_should how_could how_would how_will
"""
COMPUTE = """
total totals sum add_up average avg mean count how_many how_much number_of most least
highest lowest biggest smallest largest combined altogether in_total overall calculate
compute tally
"""
ALL = "all every everything each all_of all_the"
ID_CUES = "number no num nr no. # id code ref reference with_id numbered"
YES = """
yes y yeah yep yup sure ok okay go_ahead confirm confirmed do_it please_do correct right
that's_right approve approved yes_please go_for_it absolutely yes_do_it
"""
NO = """
no n nope nah cancel stop don't dont never_mind nevermind abort no_thanks not_now wait
dont_do_it don't_do_it
"""
WEAK = "open opened"
# A tag that ends a question about a state ("paid or not?"); anywhere else, a negation.
TAGS = "or_not or_no yes_or_no"
# Words that point back at an earlier request: the turn does not say what to do by itself.
REFER = "same same_thing the_same ditto likewise the_other the_other_one that_one_too"
SEPARATORS = "then and also plus"
# Words that ask for the whole of an amount: only with one of them is a write's amount taken from
# a read's result ("refund the full amount of order 4411"); else it is asked for.
WHOLE = """
full whole entire in_full full_amount whole_amount total_amount order_total full_refund
total_refund the_whole_amount
"""
HEAD_NEGATIONS = ""
HEAD_COMPUTE = ""
MARK_VERBS = ""
MARK_WORDS = ""
PLURAL_DETERMINERS = "these those all how_many number_of many"
# At the head of a turn, a question about a state ("did you refund ...?"), never a request.
AUXILIARIES = """
did didn't didnt has hasn't hasnt have haven't havent had was were is are isn't aren't wasn't
weren't does doesn't do
"""
ID_NOUNS: dict[str, str] = {}

DATES = {
    "today": 0,
    "tonight": 0,
    "tomorrow": 1,
    "tmrw": 1,
    "tmr": 1,
    "yesterday": -1,
    "day_after_tomorrow": 2,
    "the_day_after_tomorrow": 2,
    "day_before_yesterday": -2,
    "the_day_before_yesterday": -2,
}
WEEKDAYS = {
    "monday": 0, "tuesday": 1, "tues": 1, "wednesday": 2, "thursday": 3, "thurs": 3,
    "friday": 4, "saturday": 5, "sunday": 6,
}  # fmt: skip
MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}  # fmt: skip
# Words before a weekday that make it look back: "since monday", "last friday".
DATE_BACK = "since last past from after"

# concept: (family, base forms, past forms)
VERBS: dict[str, tuple[str, str, str]] = {
    "show": (
        READ,
        "show display view see check look look_up pull_up bring_up fetch find retrieve read "
        "describe inspect verify review lookup look_into",
        "shown showed seen saw checked looked fetched found retrieved described",
    ),
    "list": (READ, "list enumerate browse", "listed"),
    "search": (READ, "search search_for look_for query", "searched"),
    "refund": (
        WRITE,
        "refund reimburse pay_back give_back money_back",
        "refunded reimbursed",
    ),
    "charge": (WRITE, "charge bill", "charged billed"),
    "close": (
        WRITE,
        "close finish complete wrap_up shut mark_as_done mark_done close_out",
        "closed finished completed",
    ),
    "request": (WRITE, "request ask_for file raise submit", "requested filed submitted"),
    "cancel": (WRITE, "cancel void", "cancelled canceled voided"),
    "create": (WRITE, "create add set_up register", "created added"),
    "update": (WRITE, "update change edit modify amend", "updated changed edited modified"),
    "delete": (WRITE, "delete remove erase", "deleted removed erased"),
    "save": (WRITE, "save store keep write_down jot_down", "saved stored"),
    "pay": (WRITE, "pay", "paid"),
    "approve": (WRITE, "approve accept authorize authorise", "approved accepted authorized"),
    "reject": (WRITE, "reject decline deny", "rejected declined denied"),
    "assign": (WRITE, "assign reassign", "assigned reassigned"),
    "schedule": (WRITE, "schedule book reschedule", "scheduled booked rescheduled"),
    "send": (
        SEND,
        "send forward publish share notify post resend pass_on",
        "sent forwarded published shared notified posted",
    ),
}
# Verbs that are also common nouns: an action only at the head of the request.
VERB_FIRST = {
    "send": "email mail text message dm ping tweet",
    "save": "note record log",
    "charge": "bill",
}
LIGHT = {
    "show": "get give grab",
    "mark": "mark flag mark_as set_as",
    "": "make do have take handle process sort put place issue",
}
NOMINAL = {
    "refund": "refund refunds reimbursement reimbursements chargeback full_refund total_refund",
    "charge": "charge charges",
    "close": "closure closing close-out closeout",
    "request": "request requests",
    "cancel": "cancellation cancelation",
    "delete": "deletion removal",
    "update": "update change edit",
    "show": "lookup look",
    "list": "list listing",
    "approve": "approval",
    "send": "post",
}
# concept: (singular forms, plural forms)
NOUNS: dict[str, tuple[str, str]] = {
    "order": ("order purchase work_order wo", "orders purchases work_orders wos"),
    "card": ("card credit_card debit_card", "cards"),
    "amount": (
        "amount value sum price cost total_amount full_amount whole_amount order_total",
        "amounts values prices",
    ),
    "receipt": ("receipt", "receipts"),
    "invoice": ("invoice bill", "invoices bills"),
    "inbox": (
        "inbox mailbox mail_box new_email new_message new_mail",
        "emails mails messages e-mails",
    ),
    "email": ("email e-mail email_address e-mail_address address", "addresses"),
    "note": ("note comment remark memo", "notes comments remarks"),
    "status": ("status state situation stage", "statuses"),
    "customer": ("customer client buyer", "customers clients buyers"),
    "money": ("money cash funds", ""),
    "site": ("site location store shop branch place", "sites locations stores shops branches"),
    "reason": ("reason justification", "reasons"),
    "message": ("message text", "texts"),
    "channel": ("channel room", "channels rooms"),
    "team": ("team crew staff", "teams"),
    "payment": ("payment", "payments"),
    "item": ("item product", "items products"),
    "date": ("date day", "dates days"),
    "account": ("account", "accounts"),
    "limit": ("limit max maximum", "limits"),
    "id": ("id identifier", "ids"),
    "assignee": ("assignee technician tech owner", "assignees technicians techs owners"),
    "priority": ("priority", "priorities"),
}
STATUSES = {
    "open": "open still_open not_closed",
    "closed": "closed done completed finished",
    "paid": "paid settled",
    "unpaid": "unpaid not_paid outstanding",
    "refunded": "refunded reimbursed",
    "pending": "pending waiting",
    "cancelled": "cancelled canceled voided",
    "in_progress": "in_progress in-progress ongoing underway in_work being_worked_on",
    "sent": "sent",
    "charged": "charged",
    "close_requested": "close_requested pending_close awaiting_close close_pending",
}
# What marking something as a state asks for ("mark 742 as done").
MARKED = {"closed": "close", "paid": "pay", "cancelled": "cancel", "refunded": "refund",
          "sent": "send", "charged": "charge"}  # fmt: skip
# Words that open free text, by what the text is (see `reader`); the text runs to the end.
FREE_TEXT_MARKERS = {
    "text": "saying that_says which_says with_the_text with_text text: message: "
    "with_the_message with_message reading should_say should_read that_reads",
    "note": "with_the_note with_note with_a_note note: notes: with_the_comment with_comment "
    "comment: noting",
    "reason": "because cause bc with_the_reason with_reason reason: reason_being "
    "the_customer_says customer_says the_customer_said customer_said the_client_says client_says "
    "the_client_said client_said the_customer_claims customer_claims they_say they_said "
    "as_the_item as_the_order as_the_customer as_it as_they as_he as_she as_we "
    "the_item_arrived item_arrived arrived_damaged arrived_broken arrived_late never_arrived "
    "the_item_was item_was the_item_is item_is the_customer_returned customer_returned "
    "the_customer_was customer_was was_overcharged was_damaged was_faulty is_faulty "
    "is_defective was_defective wrong_item wrong_size",
}


# Markers of free text that need a clause after them: "since the pump was replaced" is a reason,
# "since the 2nd" and "since monday" are dates. `the` opens a clause only where no date follows.
CLAUSE_MARKERS = {"reason": "since"}
CLAUSE_OPENERS = """
it it's its we we've we're they they've they're he he's she she's i i've i'm you you've
there there's everything everyone nobody
"""
NOT_CLAUSE_AFTER_THE = (
    "first last next past previous beginning start end day week month year weekend"
)


def clause_markers(lexicon: Lexicon) -> tuple[tuple[str, str, str], ...]:
    """The clause markers as (word, look-ahead, kind) for the reader (see `CLAUSE_MARKERS`)."""
    dated = sorted(
        {*NOT_CLAUSE_AFTER_THE.split(), *WEEKDAYS, *lexicon.months, *DATES}, key=len, reverse=True
    )
    openers = "|".join(re.escape(word) for word in sorted(items(CLAUSE_OPENERS), key=len,
                                                              reverse=True))  # fmt: skip
    dates = "|".join(re.escape(word.replace("_", " ")) for word in dated)
    clause = rf"\s+(?:(?:{openers})\b|the\s+(?!\d|(?:{dates})\b))"
    return tuple((word, clause, kind) for kind, word in CLAUSE_MARKERS.items())


def _third(base: str) -> str:
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        return base + "es"
    if base.endswith("y") and len(base) > 2 and base[-2] not in "aeiou":
        return base[:-1] + "ies"
    return base + "s"


def _ing(base: str) -> str:
    if base.endswith("ie"):
        return base[:-2] + "ying"
    if base.endswith("e") and not base.endswith(("ee", "ye")):
        return base[:-1] + "ing"
    if base in ("get", "shop", "stop", "cancel", "ship", "log", "jot", "set", "shut", "dm"):
        return base + base[-1] + "ing"
    return base + "ing"


def verb_forms(base: str) -> list[str]:
    """The base, third-person and `-ing` forms of an English verb or verb phrase."""
    head, _, rest = base.partition(" ")
    tail = f" {rest}" if rest else ""
    return [form + tail for form in dict.fromkeys((head, _third(head), _ing(head)))]


def build() -> Lexicon:
    """The English lexicon."""
    lex = Lexicon(LANGUAGE)
    put = lex.put
    for word in items(FUNCTION):
        put(word, Entry("function"))
    for word in items(COURTESY):
        put(word, Entry("function"))
    for word in items(DETERMINERS):
        put(word, Entry("determiner"), force=True)
    for word in items(MODALS):
        put(word, Entry("modal"))
    for word in items(NEGATIONS):
        put(word, Entry("negation"), force=True)
    for phrase in items(QUESTIONS):
        put(phrase, Entry("question"), force=True)
    for phrase in items(COMPUTE):
        put(phrase, Entry("compute"), force=True)
    for phrase in items(ALL):
        put(phrase, Entry("all"), force=True)
    for phrase in items(ID_CUES):
        put(phrase, Entry("id_cue"))
    for phrase in items(WEAK):
        put(phrase, Entry("weak"), force=True)
    for phrase in items(TAGS):
        put(phrase, Entry("tag"), force=True)
    for phrase in items(REFER):
        put(phrase, Entry("refer"), force=True)
    for phrase, offset in DATES.items():
        put(phrase.replace("_", " "), Entry("date", offset=offset), force=True)
    for phrase, day in WEEKDAYS.items():
        put(phrase, Entry("date", weekday=day), force=True)
    lex.months.update(MONTHS)
    for concept, forms in STATUSES.items():
        for phrase in items(forms):
            put(phrase, Entry("status", concept), force=phrase not in ("open",))
    put("open", Entry("status", "open"), force=True)
    for concept, (singular, plural) in NOUNS.items():
        for form in items(singular):
            put(form, Entry("noun", concept))
        for form in items(plural):
            put(form, Entry("noun", concept, plural=True))
    pasts: dict[str, str | None] = {}
    for concept, (family, bases, past_forms) in VERBS.items():
        lex.verb(concept, family)
        for base in items(bases):
            for form in verb_forms(base):
                put(form, Entry("verb", concept))
        for past in items(past_forms):
            pasts[past] = next(
                (name for name, forms in STATUSES.items() if past in items(forms)), None
            )
    for concept, words in VERB_FIRST.items():
        for word in items(words):
            for form in verb_forms(word):
                noun = lex.words.get(form)
                alt = noun.concept if noun is not None and noun.role == "noun" else None
                plural = noun.plural if noun is not None and noun.role == "noun" else False
                put(form, Entry("verb_first", concept, plural=plural, alt=alt), force=True)
    for concept, words in LIGHT.items():
        for word in items(words):
            for form in verb_forms(word):
                put(form, Entry("light", concept or None))
    for concept, words in NOMINAL.items():
        for word in items(words):
            old = lex.words.get(word)
            if old is None or old.role in ("past", "noun"):
                lex.words[word] = Entry("nominal", concept)
    for past, status in pasts.items():
        old = lex.words.get(past)
        if old is None or old.role in ("verb", "light"):
            put(past, Entry("past", status), force=True)
    lex.yes.update(items(YES))
    lex.no.update(items(NO))
    return lex
