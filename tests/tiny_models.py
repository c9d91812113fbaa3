"""Tiny randomly initialised models with real tokenizers, saved as ordinary HF folders, for tests.

``build_tiny_causal(dst)``: a 2-layer Llama (~100 k parameters) with a byte-level BPE tokenizer
trained in milliseconds on Lean text, a ChatML chat template, and ``<|im_end|>`` as EOS and pad
(as SmolLM2). ``build_tiny_seq2seq(dst)``: a 2-layer T5 with the file-less ``ByT5Tokenizer`` (the
ReProver architecture). Both take about a second; load them with
``lean_dojo_v2.models.load_model(str(dst))``. Session-scoped fixtures wrap them in
``tests/models/conftest.py``; other suites import this module (``tests/`` is put on ``sys.path``).
"""

from __future__ import annotations

from pathlib import Path

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_CORPUS = [
    "n : ℕ\n⊢ n + 0 = n",
    "a b : ℕ\nh : a ≤ b\n⊢ a < b + 1",
    "x : ℝ\nhx : 0 < x\n⊢ 0 < x ^ 2",
    "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q",
    "intro n",
    "simp [Nat.add_zero]",
    "exact ⟨hp, hq⟩",
    "induction n with\n  | zero => rfl\n  | succ n ih => simp [ih]",
    "rw [Nat.add_comm] at h",
    "omega",
    "linarith [sq_nonneg x]",
    "apply And.intro <;> assumption",
    "You are a Lean 4 tactic generator. Given a proof state, reply with exactly ONE tactic.",
    "Premises:\nGoal:\n[GOAL]\n[PROOFSTEP]\nsorry admit",
]


def tiny_tokenizer():
    """A byte-level BPE tokenizer (vocab ~500) with ChatML special tokens and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        unk_token="<|endoftext|>",
    )
    tok.chat_template = CHATML
    return tok


def build_tiny_causal(dst: str | Path, *, seed: int = 0) -> Path:
    """Save a tiny random Llama + tokenizer to ``dst``; returns ``dst``."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    dst = Path(dst)
    tok = tiny_tokenizer()
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        tie_word_embeddings=False,  # tied, a random model echoes its last input token
    )
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model.save_pretrained(dst)
    tok.save_pretrained(dst)
    return dst


def build_tiny_seq2seq(dst: str | Path, *, seed: int = 0) -> Path:
    """Save a tiny random T5 with a ByT5 tokenizer (ReProver's architecture) to ``dst``."""
    import torch
    from transformers import ByT5Tokenizer, T5Config, T5ForConditionalGeneration

    dst = Path(dst)
    tok = ByT5Tokenizer()
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=384,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.pad_token_id,
    )
    T5ForConditionalGeneration(config).save_pretrained(dst)
    tok.save_pretrained(dst)
    return dst


BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def char_vocab(chars: str, words: tuple[str, ...] = ()) -> list[str]:
    """A WordPiece vocabulary of single characters (each also as a ``##`` continuation), then
    ``words``, after BERT's special tokens: no training, every Lean text tokenizes."""
    singles = sorted(set(chars))
    return [*BERT_SPECIALS, *singles, *("##" + c for c in singles), *words]


def wordpiece_tokenizer(texts: list[str], vocab_size: int = 400):
    """A fast lower-casing WordPiece tokenizer trained in milliseconds on ``texts``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tk.normalizer = normalizers.BertNormalizer(lowercase=True)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=BERT_SPECIALS, show_progress=False
    )
    tk.train_from_iterator(texts, trainer=trainer)
    cls_id, sep_id = tk.token_to_id("[CLS]"), tk.token_to_id("[SEP]")
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def build_tiny_bert(
    dst: str | Path,
    *,
    seed: int = 0,
    vocab: list[str] | None = None,
    texts: list[str] | None = None,
    num_heads: int = 4,
    max_positions: int = 128,
    dropout: float | None = None,
) -> Path:
    """Save a tiny random 2-layer ``BertModel`` (hidden 32, ~60 k parameters) and its tokenizer
    to ``dst``; returns ``dst``. The tokenizer: a ``BertTokenizer`` over ``vocab`` (e.g.
    :func:`char_vocab`), or a :func:`wordpiece_tokenizer` trained on ``texts``. ``dropout``:
    hidden and attention dropout (None: BERT's default)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    if (vocab is None) == (texts is None):
        raise ValueError("give exactly one of vocab= and texts=")
    dst = Path(dst)
    if vocab is not None:
        dst.mkdir(parents=True, exist_ok=True)
        (dst / "vocab.txt").write_text("\n".join(vocab) + "\n", "utf-8")
        tok = BertTokenizer(str(dst / "vocab.txt"), do_lower_case=False)
    else:
        tok = wordpiece_tokenizer(texts)
    extra = {}
    if dropout is not None:
        extra = {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=num_heads,
        intermediate_size=64,
        max_position_embeddings=max_positions,
        pad_token_id=tok.pad_token_id,
        **extra,
    )
    BertModel(config).save_pretrained(dst)
    tok.save_pretrained(dst)
    return dst
