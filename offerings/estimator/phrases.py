"""How the estimator says its reasons and verdicts: one table of phrases for the API and the page.

A reason or verdict is a `Phrase`: a code and its values (unrounded numbers, link kinds, names of
unknown figures, or nested phrases). `PHRASES` maps each code to its message (a msgid, with its
plural form where it counts something; a code with several wordings has one message per variant)
and to the formatter that turns the phrase's values into the message's arguments. A `Language`
says a phrase: `ENGLISH` is the API's (the msgids as they stand, Python's number format), and the
page builds its own from Django's gettext (offerings.estimator.page), so the API's `reason` and
`verdict` and the page's sentences come from the same words.

A message about a bad job parameter is a `FieldError`: a msgid of FIELD_MESSAGES and its
values, whose string is the API's English, said on the page by the same `Language`.

Pure Python, no Django: the core imports `Phrase`, `FieldError`, the messages and `gettext_noop`
from here. The markers below only mark strings for `makemessages`, under the names it extracts
(`gettext_noop`, `ngettext_lazy`, `pgettext_lazy`); a `Language` translates them when it says
them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple


def gettext_noop(message: str) -> str:
    """Mark an English string for translation without translating it (this module has no Django).

    The page says the constant through gettext while the API keeps it as it is.
    """
    return message


@dataclass(frozen=True)
class Plural:
    """A message with a plural form; `count` names the value whose number picks the form."""

    singular: str
    plural: str
    count: str


@dataclass(frozen=True)
class InContext:
    """A message with a context for translators (a separator means different things)."""

    context: str
    message: str


type Message = str | Plural | InContext


def ngettext_lazy(singular: str, plural: str, count: str) -> Plural:
    """Mark a message with a plural form, counted by the value named `count`.

    Called as Django's ngettext_lazy(singular, plural, key), so that makemessages and
    tests/test_i18n.py extract both forms; it translates nothing.
    """
    return Plural(singular, plural, count)


def pgettext_lazy(context: str, message: str) -> InContext:
    """Mark a message with a context, as Django's pgettext_lazy; it translates nothing."""
    return InContext(context, message)


@dataclass(frozen=True)
class Phrase:
    """One reason or verdict as a code (a key of PHRASES) and its values.

    Values are unrounded numbers, link kinds, names of unknown figures, or nested phrases (a
    verdict quotes its reasons and its slowest stage).
    """

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Link kinds
# --------------------------------------------------------------------------------------------


class LinkName(NamedTuple):
    """How a link kind is named: in a sentence, and in the page's table cells."""

    name: str  # in phrases, the API's and the page's; a msgid where it needs translating
    label: str | None = None  # shorter, in table cells and headings; a name in any language


#: Every link kind (and "unknown", as the page's tables show an unknown link), named once.
LINK_NAMES: dict[str, LinkName] = {
    "nvlink": LinkName("NVLink"),
    "nvlink-sharp": LinkName(
        gettext_noop("NVLink with NVSwitch SHARP"), label="NVLink + NVSwitch SHARP"
    ),
    "nvlink5-sharp": LinkName(
        gettext_noop("NVLink 5 with NVSwitch SHARP"), label="NVLink 5 + NVSwitch SHARP"
    ),
    "infinity-fabric": LinkName("Infinity Fabric"),
    "pcie": LinkName("PCIe"),
    "infiniband": LinkName("InfiniBand"),
    "infiniband-sharp": LinkName(gettext_noop("InfiniBand with SHARP"), label="InfiniBand + SHARP"),
    "roce": LinkName("RoCE"),
    "efa": LinkName("EFA"),
    "erdma": LinkName("eRDMA"),
    "tcpx": LinkName("GPUDirect-TCPX"),
    "tcpxo": LinkName("GPUDirect-TCPXO"),
    "ethernet": LinkName(gettext_noop("TCP over the general network")),
    "tree": LinkName(gettext_noop("NCCL tree between nodes")),
    "tree-efa": LinkName(gettext_noop("NCCL tree over EFA")),
    "unknown": LinkName(gettext_noop("unknown")),
}


# --------------------------------------------------------------------------------------------
# Languages
# --------------------------------------------------------------------------------------------

REASONS_SEPARATOR = pgettext_lazy("between reasons", "; ")
FIGURES_SEPARATOR = pgettext_lazy("between names of unknown figures", ", ")
VERDICT_AND_CAUSE = pgettext_lazy("a verdict and its cause", "%(verdict)s: %(cause)s")


@dataclass(frozen=True)
class Language:
    """How one language says a message: its translations, its plural rule, its numbers."""

    gettext: Callable[[str], str]
    ngettext: Callable[[str, str, int], str]
    pgettext: Callable[[str, str], str]
    decimal: Callable[[float, int], str]  # (value, decimal places) -> grouped digits

    def message(self, message: Message, values: Mapping[str, Any]) -> str:
        """One message in this language, its %(name)s placeholders filled from `values`."""
        if type(message) is str:
            text = self.gettext(message)
        elif isinstance(message, Plural):
            text = self.ngettext(message.singular, message.plural, values[message.count])
        else:
            text = self.pgettext(message.context, message.message)
        return text % values

    def say(self, phrase: Phrase) -> str:
        """A reason or verdict of the estimator in this language."""
        try:
            wording = PHRASES[phrase.code]
        except KeyError:
            raise ValueError(f"unknown phrase code {phrase.code!r}") from None
        params = phrase.params
        message = wording.message
        if wording.variant is not None:
            message = wording.messages[wording.variant(params)]
        said = self.message(message, wording.values(params, self))
        cause = params.get(wording.cause) if wording.cause else None
        if cause is None:
            return said
        return self.message(VERDICT_AND_CAUSE, {"verdict": said, "cause": self.say(cause)})

    def reasons(self, reasons: Iterable[Phrase]) -> str:
        return self.message(REASONS_SEPARATOR, {}).join([self.say(reason) for reason in reasons])

    def figures(self, names: Iterable[str]) -> str:
        """Names of unknown figures (msgids marked where they are written)."""
        return self.message(FIGURES_SEPARATOR, {}).join([self.gettext(name) for name in names])

    def link(self, kind: str | None) -> str:
        """A link kind as a sentence names it."""
        name = LINK_NAMES.get(kind or "")
        return self.gettext(name.name) if name else str(kind)

    def link_label(self, kind: str) -> str:
        """A link kind as a table cell names it."""
        name = LINK_NAMES.get(kind)
        if name is None:
            return kind
        return name.label or self.gettext(name.name)

    def gib(self, value: float) -> str:
        return self.decimal(value, 1)


def _same(message: str) -> str:
    return message


ENGLISH = Language(
    gettext=_same,
    ngettext=lambda singular, plural, count: singular if count == 1 else plural,
    pgettext=lambda context, message: message,
    decimal=lambda value, places: f"{value:,.{places}f}",
)


def english(phrase: Phrase) -> str:
    """The API's English text of a reason, verdict or stage phrase."""
    return ENGLISH.say(phrase)


def join_reasons(reasons: Iterable[Phrase]) -> str | None:
    """The API's `reason`: every reason in English, separated by semicolons; None without one."""
    reasons = tuple(reasons)
    return ENGLISH.reasons(reasons) if reasons else None


# --------------------------------------------------------------------------------------------
# Messages about the job's parameters
# --------------------------------------------------------------------------------------------

#: Every message `offerings.estimator.core.parse_job` gives about a parameter: a msgid, whose
#: placeholders a `FieldError`'s values fill.
GIVE_ONCE = gettext_noop("Give this parameter once.")
REQUIRED = gettext_noop("This field is required.")
NOT_A_NUMBER = gettext_noop("Enter a number.")
NOT_A_WHOLE_NUMBER = gettext_noop("Enter a whole number.")
AT_LEAST = gettext_noop("Must be at least %(n)s.")
GREATER_THAN = gettext_noop("Must be greater than %(n)s.")
AT_MOST = gettext_noop("Must be at most %(n)s.")
CHOOSE_ONE = gettext_noop("Choose one of: %(n)s.")
NOT_WHOLE = gettext_noop("%(n)s is not a whole number.")
OUT_OF_RANGE = gettext_noop("%(n)s is out of range: each must be 1 to %(m)s.")
TOO_MANY_NODES = gettext_noop("Give at most %(n)s node counts.")
TOO_MANY_GPU_COUNTS = gettext_noop("Give at most %(n)s GPU counts.")
NODES_OR_GPUS = gettext_noop("Give node counts or GPU counts, not both.")
FIELD_MESSAGES = (
    GIVE_ONCE,
    REQUIRED,
    NOT_A_NUMBER,
    NOT_A_WHOLE_NUMBER,
    AT_LEAST,
    GREATER_THAN,
    AT_MOST,
    CHOOSE_ONE,
    NOT_WHOLE,
    OUT_OF_RANGE,
    TOO_MANY_NODES,
    TOO_MANY_GPU_COUNTS,
    NODES_OR_GPUS,
)


def _field_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Values as every language writes them in a parameter's message: a float in Python's
    shortest form ("0", "100000"), anything else as it is (a whole number, a quoted text)."""
    return {name: format(v, "g") if isinstance(v, float) else v for name, v in values.items()}


class FieldError(str):
    """A message about one parameter: its msgid (one of FIELD_MESSAGES) and its values.

    As a string it is its English text, the API's (so a list of them reads as the messages it
    answers); `say` gives it in another language, from the same msgid and values, so a page
    translates the message without reading its English.
    """

    msgid: str
    values: Mapping[str, Any]

    def __new__(cls, msgid: str, values: Mapping[str, Any] | None = None) -> FieldError:
        values = dict(values or {})
        error = super().__new__(cls, ENGLISH.message(msgid, _field_values(values)))
        error.msgid = msgid
        error.values = values
        return error

    def __reduce__(self):
        return (FieldError, (self.msgid, dict(self.values)))

    def say(self, language: Language) -> str:
        """The message in `language` (`ENGLISH`: the string itself)."""
        return language.message(self.msgid, _field_values(self.values))


# --------------------------------------------------------------------------------------------
# The phrases
# --------------------------------------------------------------------------------------------

type Values = Callable[[Mapping[str, Any], Language], dict[str, Any]]


@dataclass(frozen=True)
class Wording:
    """How one phrase code is said: its message and the arguments it takes from the phrase.

    A code with several wordings gives `messages` by variant and `variant`, which picks one from
    the phrase's values. With `cause`, the phrase held in that value (a slowest stage) follows
    the message as "verdict: cause".
    """

    message: Message = ""
    values: Values = lambda params, say: {}
    messages: Mapping[str, Message] = field(default_factory=dict)
    variant: Callable[[Mapping[str, Any]], str] | None = None
    cause: str | None = None


def _nodes(params: Mapping[str, Any], say: Language) -> dict[str, Any]:
    return {"nodes": params["nodes"]}


def _states(params: Mapping[str, Any], say: Language) -> dict[str, Any]:
    return {
        "per_gpu": say.gib(params["per_gpu_gib"]),
        "gpus": params["gpus"],
        "limit": say.gib(params["limit_gib"]),
    }


def _domain(params: Mapping[str, Any], say: Language) -> dict[str, Any]:
    return {
        "needed": say.gib(params["needed_gib"]),
        "weights": say.gib(params["weights_gib"]),
        "kv": say.gib(params["kv_gib"]),
        "domain_gpus": params["domain_gpus"],
        "spanning": params["spanning"],
        "usable": say.gib(params["usable_gib"]),
        "nodes": params["nodes_needed"],
    }


def _figures(params: Mapping[str, Any], say: Language) -> dict[str, Any]:
    return {"figures": say.figures(params["missing"])}


def _reasons(params: Mapping[str, Any], say: Language) -> dict[str, Any]:
    return {"reasons": say.reasons(params["reasons"])}


def _share(params: Mapping[str, Any], say: Language) -> dict[str, Any]:
    efficiency = params["efficiency"]
    values = {"efficiency": f"{efficiency:.0%}", "share": f"{1 - efficiency:.0%}"}
    if params.get("stage") is not None:
        values["stage"] = say.say(params["stage"])
    return values


def _stage(params: Mapping[str, Any], say: Language) -> dict[str, Any]:
    return {
        "link": say.link(params["link"]),
        "bandwidth": say.decimal(params["bandwidth"], 1),
        "gpus": params.get("group_gpus"),
    }


def _tensor_parallel(params: Mapping[str, Any], say: Language) -> dict[str, Any]:
    values = {"reasons": say.reasons(params["reasons"])}
    if params["tp_link"] is not None:
        values["link"] = say.link(params["tp_link"])
        values["ms"] = say.decimal(params["tp_s_per_token"] * 1e3, 2)
    return values


#: Every phrase code the estimator says. Reasons (why a row does not fit) come first, then
#: verdicts, then the stage phrases a verdict quotes.
PHRASES: dict[str, Wording] = {
    "multi-node-unstated": Wording(
        gettext_noop(
            "%(nodes)s nodes: self-serve multi-node booking is not stated for this instance"
        ),
        _nodes,
    ),
    "no-multi-node": Wording(
        gettext_noop("%(nodes)s nodes: no self-serve multi-node booking (one node, or sales only)"),
        _nodes,
    ),
    "beyond-max-nodes": Wording(
        gettext_noop(
            "%(nodes)s nodes: beyond the largest self-serve cluster of %(max_nodes)s nodes"
        ),
        lambda params, say: {"nodes": params["nodes"], "max_nodes": params["max_nodes"]},
    ),
    "states-too-big": Wording(
        messages={
            "sharded": ngettext_lazy(
                "model states need %(per_gpu)s GiB per GPU (sharded over %(gpus)s GPU), more "
                "than the %(limit)s GiB left after the activation margin",
                "model states need %(per_gpu)s GiB per GPU (sharded over %(gpus)s GPUs), more "
                "than the %(limit)s GiB left after the activation margin",
                "gpus",
            ),
            "replicated": ngettext_lazy(
                "model states need %(per_gpu)s GiB per GPU (replicated on each of %(gpus)s GPU), "
                "more than the %(limit)s GiB left after the activation margin",
                "model states need %(per_gpu)s GiB per GPU (replicated on each of %(gpus)s GPUs), "
                "more than the %(limit)s GiB left after the activation margin",
                "gpus",
            ),
        },
        variant=lambda params: "sharded" if params["sharded"] else "replicated",
        values=_states,
    ),
    "domain-too-small": Wording(
        messages={
            "pcie": ngettext_lazy(
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); one NVLink domain "
                "of one GPU (PCIe only) holds %(usable)s GiB usable; tensor parallel would take "
                "%(nodes)s node",
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); one NVLink domain "
                "of one GPU (PCIe only) holds %(usable)s GiB usable; tensor parallel would take "
                "%(nodes)s nodes",
                "nodes",
            ),
            "booked": ngettext_lazy(
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); the "
                "%(domain_gpus)s GPUs booked of its %(spanning)s-GPU NVLink domain hold "
                "%(usable)s GiB usable; tensor parallel would take %(nodes)s node",
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); the "
                "%(domain_gpus)s GPUs booked of its %(spanning)s-GPU NVLink domain hold "
                "%(usable)s GiB usable; tensor parallel would take %(nodes)s nodes",
                "nodes",
            ),
            "domain": ngettext_lazy(
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); one NVLink domain "
                "of %(domain_gpus)s GPUs holds %(usable)s GiB usable; tensor parallel would take "
                "%(nodes)s node",
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); one NVLink domain "
                "of %(domain_gpus)s GPUs holds %(usable)s GiB usable; tensor parallel would take "
                "%(nodes)s nodes",
                "nodes",
            ),
        },
        variant=lambda params: params["domain"],
        values=_domain,
    ),
    "unknown": Wording(gettext_noop("unknown: %(figures)s"), _figures),
    # Verdicts
    "cannot-estimate": Wording(gettext_noop("cannot estimate: unknown %(figures)s"), _figures),
    "does-not-fit": Wording(gettext_noop("does not fit (%(reasons)s)"), _reasons),
    # The job would fit; what stops the row is booking that many nodes self-serve.
    "not-bookable": Wording(gettext_noop("not bookable as asked (%(reasons)s)"), _reasons),
    "no-estimate": Wording(gettext_noop("no estimate")),
    "if-it-fitted": Wording(
        gettext_noop("does not fit (%(reasons)s); if it did: %(verdict)s"),
        lambda params, say: _reasons(params, say) | {"verdict": say.say(params["verdict"])},
    ),
    "if-it-were-bookable": Wording(
        gettext_noop("not bookable as asked (%(reasons)s); if it were: %(verdict)s"),
        lambda params, say: _reasons(params, say) | {"verdict": say.say(params["verdict"])},
    ),
    "communication-bound": Wording(
        messages={
            "beyond": ngettext_lazy(
                "communication-bound beyond %(count)s node",
                "communication-bound beyond %(count)s nodes",
                "count",
            ),
            "at": ngettext_lazy(
                "communication-bound at %(count)s node",
                "communication-bound at %(count)s nodes",
                "count",
            ),
        },
        variant=lambda params: "beyond" if params["beyond"] is not None else "at",
        values=lambda params, say: {
            "count": params["beyond"] if params["beyond"] is not None else params["at"]
        },
        cause="stage",
    ),
    "no-communication": Wording(gettext_noop("%(efficiency)s efficient: no communication"), _share),
    "efficient": Wording(
        gettext_noop(
            "%(efficiency)s efficient: communication adds %(share)s to the step; slowest link: "
            "%(stage)s"
        ),
        _share,
    ),
    "fits-domain": Wording(
        ngettext_lazy(
            "fits one NVLink domain of %(count)s GPU (%(needed)s GiB needed)",
            "fits one NVLink domain of %(count)s GPUs (%(needed)s GiB needed)",
            "count",
        ),
        lambda params, say: {
            "count": params["domain_gpus"],
            "needed": say.gib(params["needed_gib"]),
        },
    ),
    "cannot-tell": Wording(gettext_noop("cannot tell: %(reasons)s"), _reasons),
    "inference-does-not-fit": Wording(
        messages={
            "": gettext_noop("does not fit: %(reasons)s"),
            "tensor-parallel": gettext_noop(
                "does not fit: %(reasons)s; tensor-parallel traffic over %(link)s costs about "
                "%(ms)s ms per token"
            ),
        },
        variant=lambda params: "" if params["tp_link"] is None else "tensor-parallel",
        values=_tensor_parallel,
    ),
    # The slowest stage, as a verdict quotes it
    "fabric-stage": Wording(
        gettext_noop("the network between nodes gives %(bandwidth)s GB/s per GPU (%(link)s)"),
        _stage,
    ),
    "intra-stage": Wording(
        messages={
            "domain": gettext_noop(
                "%(link)s gives %(bandwidth)s GB/s per GPU inside the %(gpus)s-GPU NVLink domain"
            ),
            "node": gettext_noop("%(link)s gives %(bandwidth)s GB/s per GPU inside the node"),
            "each-node": gettext_noop("%(link)s gives %(bandwidth)s GB/s per GPU inside each node"),
        },
        variant=lambda params: params["where"],
        values=_stage,
    ),
}
