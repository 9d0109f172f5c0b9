"""Trains the small tokenizers that runtime/llm's tests load, and writes what the reference libraries
(Hugging Face `tokenizers`, `sentencepiece`) produce for them: the expected ids and texts.

    .venv/bin/python runtime/llm/testdata/make_tokenizers.py [OUT_DIR]   (default: this folder)
    .venv/bin/python runtime/llm/testdata/make_tokenizers.py --check     (CTest: the committed files
                                                                          are what this writes)

Nothing is downloaded: the tokenizers are trained on the corpus below, configured like the families
Ember's LLM runner serves (Llama 3, Qwen2, GPT-2/SmolLM, Llama 2 as tokenizer.json and as a
SentencePiece model). Every expected value comes from the Python libraries, never from Ember.
Training is deterministic, so a rerun rewrites the same files.
"""

import io
import json
import os
import pathlib
import random
import sys

# One training thread: the trainers' tie-breaking is only deterministic without parallelism.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

import sentencepiece as spm
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

HERE = pathlib.Path(__file__).parent
CHECK = sys.argv[1:] == ["--check"]
OUT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 and not CHECK else HERE)

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A tokenizer splits text into pieces that a language model reads as integers.",
    "We'll see how it's done: they're here, I've seen it, you'd know, I'm sure.",
    "Ember compiles PyTorch programs ahead of time and runs them with a lean runtime.",
    "def encode(self, text):\n    return [self.vocab[t] for t in text.split()]\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "In 2024, the population was 8,118,835,999 and growing by 0.88% per year.",
    "Prices: $12.99, EUR 7,50, 1/2 cup, 3.14159265358979, 1e-10, 0x1F.",
    "She said, \"Hello, world!\" and left -- quickly; then (again) returned...",
    "Large language models generate one token at a time, streaming the output.",
    "Unicode: café, naïve, résumé, Zürich, São Paulo, Ελληνικά, Русский текст.",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
    "Emoji 😀 👍🏽 👨‍👩‍👧‍👦 🇫🇷 are sequences of code points.",
    "   indented line\twith\ttabs\n\n\nand blank lines   ",
    "User: What is the capital of France?\nAssistant: The capital of France is Paris.",
    "Numbers like 1234567890 and 42 and 7 appear often in technical documents.",
    "THE SHOUTING HEADLINE SAID: WE'RE NOT DONE YET!",
    "import torch\nx = torch.randn(2, 3)\nprint(x @ x.T)\n",
]


def corpus():
    rng = random.Random(1234)
    words = " ".join(SENTENCES).split()
    lines = list(SENTENCES) * 20
    for _ in range(1500):
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 14))))
    return lines


TEST_TEXTS = [
    "",
    " ",
    "Hello",
    "Hello world",
    " Hello world ",
    "  leading and trailing  ",
    "The quick brown fox jumps over the lazy dog.",
    "We'll see: it's, they're, I've, you'd, I'm, WE'LL, IT'S, 's 'S",
    "Punctuation!!! ... ??? ;;; --- (([[{{}}]])) <<>> @#$%^&*_+=|\\/~`",
    "1 12 123 1234 12345 123456 1234567 12345678901234567890",
    "3.14159 -42 +7 1,000,000 0.5% 1e-10 0xDEADBEEF",
    "東京は日本の首都です。北京是中国的首都。",
    "한국어 텍스트와 日本語 mixed with English",
    "Emoji: 😀😃😄 👍🏽 👍🏿 👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 ❤️",
    "cafe\u0301 vs café, n\u0303 Å vs A\u030a, ﬁ ligature",
    "tab\there\t\ttwo tabs",
    "line one\nline two\n\n\nafter three newlines\r\nwindows",
    "   \n\n   \t  ",
    "trailing spaces     ",
    "\n",
    "<|endoftext|>",
    "Hello<|endoftext|>world <|endoftext|> again",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<s>[INST] Hello [/INST] Hi</s>",
    "<s> leading space after special</s>",
    "text <tool_call>{\"name\": \"f\"}</tool_call> end",
    "the <mask> is here and<mask>there",
    "invalid-looking: <|im_start <|im_start|<|im_start|>> <0xFF> <0x41> </s > < s>",
    "\u0000 control \u0007 chars \u001b[0m and \u200b zero width \ufeff bom",
    "ＦＵＬＬＷＩＤＴＨ ｶﾀｶﾅ ①②③",
    "x" * 300,
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
    ("Large language models generate one token at a time. " * 12
     + "The quick brown fox jumps over the lazy dog; 12345 times, in 東京 and Zürich 😀!\n") * 4,
]


def byte_level_bpe(name, pattern, specials, normalizer=None, ignore_merges=False, bos=None,
                   string_merges=False, extra_added=()):
    tok = Tokenizer(models.BPE())
    if normalizer is not None:
        tok.normalizer = normalizer
    if pattern is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer)
    if bos is None:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    else:
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                          special_tokens=[(bos, tok.token_to_id(bos))])])
    tok.add_tokens(list(extra_added))
    doc = json.loads(tok.to_str())
    doc["model"]["ignore_merges"] = ignore_merges
    if string_merges:
        doc["model"]["merges"] = [" ".join(m) for m in doc["model"]["merges"]]
    return Tokenizer.from_str(json.dumps(doc))


def llama2_bpe(legacy):
    """Llama 2 / TinyLlama's tokenizer.json layout: <unk> <s> </s>, the 256 byte tokens <0xNN>, then
    the merged pieces; BPE with byte_fallback. `legacy`: the normalizer (Prepend + Replace) and
    no pre-tokenizer; else the Metaspace pre-tokenizer (prepend_scheme "first"), no byte tokens (the
    <unk> path: fuse_unk) and a Metaspace decoder."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=legacy))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never")
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=["<unk>", "<s>", "</s>"],
                                  show_progress=False)
    # Trained on the Latin-script lines only, so that CJK, emoji and Greek take the byte-fallback
    # (or <unk>) path. (The trainer's limit_alphabet breaks ties nondeterministically.)
    tok.train_from_iterator([s for s in corpus() if all(ord(c) < 0x250 for c in s)], trainer)
    doc = json.loads(tok.to_str())
    trained = sorted(doc["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    if legacy:
        for b in range(256):
            vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece, _ in trained:
        if piece not in vocab:
            vocab[piece] = len(vocab)
    doc["model"]["vocab"] = vocab
    for t in doc["added_tokens"]:
        t["id"] = vocab[t["content"]]
    if legacy:
        doc["pre_tokenizer"] = None
        doc["decoder"] = json.loads(decoders.Sequence([
            decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
            decoders.Strip(content=" ", left=1, right=0)]).__getstate__())
    else:
        doc["normalizer"] = None
        doc["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace(
            replacement="▁", prepend_scheme="first", split=False).__getstate__())
        doc["decoder"] = json.loads(decoders.Sequence([
            decoders.ByteFallback(), decoders.Metaspace(replacement="▁",
                                                         prepend_scheme="first")]).__getstate__())
    doc["post_processor"] = json.loads(processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]).__getstate__())
    tok = Tokenizer.from_str(json.dumps(doc))
    if legacy:
        # A normalized added token: matched after the normalizer ran ("▁quick▁fox").
        tok.add_tokens([AddedToken("quick fox", normalized=True, special=False)])
    return tok


def components():
    """The components no family above uses: NFKC, Strip and a regex Replace; Split's other behaviors
    and invert; ByteLevel with add_prefix_space; RobertaProcessing; single_word and rstrip."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKC(), normalizers.Strip(left=True, right=True),
        normalizers.Replace(Regex(r"[ \t]{2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\d"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"[,;]"), behavior="removed"),
        pre_tokenizers.Split(Regex(r"[!?.]"), behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"[A-Z]"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"\p{Han}+"), behavior="isolated", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=800, special_tokens=["<s>", "</s>"],
                                  show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 1), ("<s>", 0))
    tok.add_special_tokens([AddedToken("<mask>", single_word=True, rstrip=True, special=True)])
    return tok


def decode_stream(tok, ids, skip):
    from tokenizers.decoders import DecodeStream
    # The text each step returns ("" for None); the step that raises (HF's "invalid prefix": a
    # token changed how the earlier ones decode) ends the list with None.
    stream = DecodeStream(skip_special_tokens=skip)
    steps = []
    for i in ids:
        try:
            steps.append(stream.step(tok, i) or "")
        except Exception:  # noqa: BLE001 -- the library raises a plain Exception
            steps.append(None)
            break
    return steps


def expected_hf(tok, name):
    cases = []
    for text in TEST_TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        case = {
            "text": text,
            "ids": ids,
            "ids_special": tok.encode(text, add_special_tokens=True).ids,
            "decode": tok.decode(ids, skip_special_tokens=False),
            "decode_skip": tok.decode(ids, skip_special_tokens=True),
        }
        cases.append(case)
    # Id sequences no text produces: every token alone and in random runs (byte tokens that cut a
    # character, special tokens mid-sequence), with HF's DecodeStream's step outputs.
    rng = random.Random(7)
    n = tok.get_vocab_size(with_added_tokens=True)
    id_cases = [list(range(0, n, 1))[i:i + 64] for i in range(0, n, 64)]
    id_cases += [[rng.randrange(n) for _ in range(rng.randint(1, 12))] for _ in range(60)]
    decodes = []
    for ids in id_cases:
        decodes.append({
            "ids": ids,
            "decode": tok.decode(ids, skip_special_tokens=False),
            "decode_skip": tok.decode(ids, skip_special_tokens=True),
            "stream": decode_stream(tok, ids, False),
            "stream_skip": decode_stream(tok, ids, True),
        })
    for case in cases:
        case["stream_skip"] = decode_stream(tok, case["ids_special"], True)
    vocab = tok.get_vocab(with_added_tokens=True)
    return {
        "tokenizer": name,
        "vocab_size": len(vocab),
        "token_ids": {t.content: vocab[t.content] for t in tok.get_added_tokens_decoder().values()},
        "special": sorted(i for i, t in tok.get_added_tokens_decoder().items() if t.special),
        "cases": cases,
        "decodes": decodes,
    }


def sentencepiece_model():
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus()), model_writer=model, model_type="bpe", vocab_size=800,
        byte_fallback=True, character_coverage=0.98, normalization_rule_name="identity",
        remove_extra_whitespaces=False, split_digits=True, allow_whitespace_only_pieces=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2, num_threads=1)
    return model.getvalue()


def expected_sp(blob):
    sp = spm.SentencePieceProcessor(model_proto=blob)

    def decode_keep(ids):
        # Control tokens as their text, the runs between them decoded by sentencepiece.
        out, run = "", []
        for i in ids:
            if sp.is_control(i):
                out += sp.decode(run) + sp.id_to_piece(i)
                run = []
            else:
                run.append(i)
        return out + sp.decode(run)

    cases = []
    for text in TEST_TEXTS:
        ids = sp.encode(text)
        cases.append({"text": text, "ids": ids, "ids_special": sp.encode(text, add_bos=True),
                      "decode": decode_keep(ids), "decode_skip": sp.decode(ids)})
    rng = random.Random(7)
    n = sp.get_piece_size()
    id_cases = [[rng.randrange(n) for _ in range(rng.randint(1, 12))] for _ in range(60)]
    decodes = [{"ids": ids, "decode": decode_keep(ids), "decode_skip": sp.decode(ids)}
               for ids in id_cases]
    return {"tokenizer": "sentencepiece", "vocab_size": n,
            "token_ids": {sp.id_to_piece(i): i for i in (0, 1, 2)},
            "special": [i for i in range(n) if sp.is_control(i)],
            "cases": cases, "decodes": decodes}


def main():
    if CHECK:
        import filecmp
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            write_all(pathlib.Path(tmp))
            names = sorted(p.name for p in pathlib.Path(tmp).iterdir())
            stale = [n for n in names if not filecmp.cmp(HERE / n, pathlib.Path(tmp) / n, False)]
        if stale:
            sys.exit(f"stale test data (rerun {pathlib.Path(__file__).name}): {', '.join(stale)}")
        print(f"{len(names)} files up to date")
        return
    write_all(OUT)


def write_all(out):
    out.mkdir(parents=True, exist_ok=True)
    toks = {
        "llama3": byte_level_bpe(
            "llama3", LLAMA3_PATTERN, ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                       "<|end_header_id|>", "<|eot_id|>"],
            ignore_merges=True, bos="<|begin_of_text|>"),
        "qwen2": byte_level_bpe(
            "qwen2", QWEN2_PATTERN, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            normalizer=normalizers.NFC(),
            extra_added=[AddedToken("<tool_call>", special=False, normalized=False),
                         AddedToken("</tool_call>", special=False, normalized=False)]),
        "gpt2": byte_level_bpe("gpt2", None, ["<|endoftext|>"], string_merges=True),
        "llama2": llama2_bpe(legacy=True),
        "metaspace_unk": llama2_bpe(legacy=False),
        "components": components(),
    }
    toks["gpt2"].add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False, special=True)])
    for name, tok in toks.items():
        (out / f"{name}.json").write_text(tok.to_str(pretty=False) + "\n")
        (out / f"{name}.expected.json").write_text(
            json.dumps(expected_hf(tok, name), ensure_ascii=False) + "\n")
    blob = sentencepiece_model()
    (out / "sentencepiece.model").write_bytes(blob)
    (out / "sentencepiece.expected.json").write_text(
        json.dumps(expected_sp(blob), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
