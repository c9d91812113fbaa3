"""Layer 4 (external_api): the request and response bodies (pydantic), i.e. the OpenAPI schema.

The LeanCopilot protocol exactly (``/generate``, ``/encode``), with optional fields only where
it is a superset (``use_reward``, ``num_samples``; ``model_score``, ``steps_remaining`` and
``reward`` appear in an output only when ``use_reward`` asked for them); lean-premise-server's
``/retrieve``; the OpenAI chat-completions subset the official client and ``ExternalProver``
use. Limits that depend on the config (input length, ``k``, ``n``) are checked by the routes.
The model routes' requests are strict: a JSON string or boolean where a number is due (``"3"``,
``true``) is refused (a 422; on the OpenAI routes a 400, as OpenAI answers), not read as the
number it spells. A chat message's role is one of OpenAI's; its content is checked against
OpenAI's rules by :mod:`.openai_compat`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, WithJsonSchema


class GenerateRequest(BaseModel):
    """LeanCopilot's ``GeneratorRequest`` (upstream v2 added ``use_reward``)."""

    model_config = ConfigDict(strict=True)

    name: str = Field(description="the generator to use (GET /models lists them)")
    input: str = Field(description="the pretty-printed goal state, or 'no goals'")
    prefix: str | None = Field("", description="every output starts with this text")
    use_reward: bool = Field(
        False, description="re-rank by the progress model's predicted steps remaining"
    )
    num_samples: int | None = Field(
        None, ge=1, description="outputs wanted (default: the model's, else the server's)"
    )


class Generation(BaseModel):
    output: str
    score: float = Field(description="exp of the summed log-prob; with use_reward, the reward")
    model_score: float | None = Field(None, description="use_reward: the model's score")
    steps_remaining: float | None = Field(None, description="use_reward: predicted steps left")
    reward: float | None = Field(None, description="use_reward: -steps_remaining")


class GenerateResponse(BaseModel):
    outputs: list[Generation]


class EncodeRequest(BaseModel):
    """LeanCopilot's ``EncoderRequest``."""

    model_config = ConfigDict(strict=True)

    name: str = Field(description="an encoder or a retriever (its encoder)")
    input: str


class EncodeResponse(BaseModel):
    outputs: list[float] = Field(description="one L2-normalised embedding")


class NewPremise(BaseModel):
    model_config = ConfigDict(strict=True)

    name: str
    decl: str = Field(description="the declaration (signature) text that is encoded")


class Position(BaseModel):
    model_config = ConfigDict(strict=True)

    line: int = Field(ge=1)
    column: int = Field(ge=0)


class RetrieveRequest(BaseModel):
    """lean-premise-server's request (what Lean's premise-selection client sends), plus an
    optional retriever name and file position. Integers in ``local_premises`` and
    ``imported_modules`` are positions in ``GET /indexed-premises`` and ``GET /indexed-modules``;
    other fields the client sends (``caller_in_module_system``, ``imported_all_modules``) are
    accepted and ignored. Strict: ``"k": "3"`` or ``"k": true`` is a 422 naming ``k``."""

    model_config = ConfigDict(strict=True)

    state: str = Field(description="the goal state")
    k: int = Field(
        16, description="premises wanted: 0 or less gives [], above max_k (1024) is capped"
    )
    imported_modules: list[StrictStr | StrictInt] | None = Field(
        None,
        description="Lean modules imported (names, or positions in GET /indexed-modules): "
        "only their premises (and their imports') rank; unknown ones add nothing",
    )
    local_premises: list[StrictStr | StrictInt] | None = Field(
        None,
        description="indexed premises admitted as well (names, or positions in GET "
        "/indexed-premises); unknown ones add nothing",
    )
    new_premises: list[NewPremise] | None = Field(
        None,
        description="premises the index lacks, encoded for this request (beyond "
        "max_new_premises, 2048, the rest is dropped); one named like an indexed premise "
        "replaces it",
    )
    name: str | None = Field(None, description="the retriever (default: the only one served)")
    file_path: str | None = Field(
        None, description="a file of the retriever's corpus: its accessible premises rank"
    )
    position: Position | None = Field(
        None, description="with file_path: only that file's premises before this position"
    )


class RetrievedPremise(BaseModel):
    score: float
    name: str


_CONTENT_SCHEMA = {
    "anyOf": [
        {"type": "string"},
        {"type": "array", "items": {"type": "object"}, "minItems": 1},
        {"type": "null"},
    ]
}


class ChatMessage(BaseModel):
    """One message of a chat: OpenAI's roles; ``content`` a string or an array of content
    parts (null only for an assistant message with ``tool_calls``), checked by
    :func:`~lean_dojo_v2.external_api.openai_compat.check_chat_request` to name the part at
    fault as OpenAI does."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Annotated[Any, WithJsonSchema(_CONTENT_SCHEMA)] = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    include_usage: bool | None = Field(
        None, description="end the stream with a chunk that carries the usage (no choices)"
    )


class ChatRequest(BaseModel):
    """The subset of OpenAI's chat-completions request the server acts on (other fields are
    accepted and ignored)."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    n: int = Field(1, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool | None = False
    top_logprobs: int | None = Field(
        None, ge=0, le=20, description="only 0: a choice's logprobs hold the whole completion"
    )
    stream: bool | None = False
    stream_options: StreamOptions | None = None


class ChatChoice(BaseModel):
    index: int
    message: dict[str, Any]
    finish_reason: str
    logprobs: dict[str, Any] | None = None


class ChatResponse(BaseModel):
    id: str
    object: str = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: dict[str, int]


class ModelCard(BaseModel):
    id: str
    object: str = "model"
    created: int = 0
    owned_by: str = "lean-dojo-v2"


class ModelList(BaseModel):
    object: str = "list"
    data: list[ModelCard]


class ErrorResponse(BaseModel):
    detail: str
