"""`VLLMServerWeightTransfer`: TRL's `WeightTransferProtocol` for a `vllm serve` server on the same machine, with no
NCCL and no CUDA (vLLM-CPU, CI), by vLLM's in-place reload.

TRL 1.16's `AsyncGRPOTrainer` syncs weights as `pause()`, `send_weights(iterator)`, `resume()` (its
`_sync_weight_merged`), then bumps its `model_version`. Its default transfer streams the tensors over NCCL, which
needs CUDA. Here:

- `pause()` holds back new requests (`WeightsVersion.pause`), then asks the server to pause, aborting the requests
  in flight (`POST /pause?mode=abort`: vLLM answers them with the tokens sampled so far; `VersionedEngine` asks for
  the rest once the new weights are live);
- `send_weights()` writes the tensors to one safetensors file (in `/dev/shm` when there is one) and has each server
  worker reload from it in place (`POST /collective_rpc` -> `WeightReloadExtension.rollgym_reload_weights`, the
  reload of `rg.patch_trl_for_vllm_cpu` with its tied-embedding repack), then drops the prefix cache;
- `resume()` resumes the server, then lets requests go (`WeightsVersion.resume`: the next version) and labels the
  server's weights with it (`POST /update_weight_version`).

The server needs `VLLM_SERVER_DEV_MODE=1` (the pause, RPC and cache routes) and `--worker-extension-cls
rollgym.engines.vllm_reload.WeightReloadExtension`. A reload that fails reloads the last weights that loaded (or the
server's own checkpoint); the requests the failed sync interrupted fail with `WeightSyncError` (their rollouts are
infrastructure failures) and training goes on with the old weights until the next sync. A step the sync cannot do
without (the server does not pause, resume, or restore) raises to the trainer, after failing the waiting requests.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from rollgym.engines.errors import WeightSyncError
from rollgym.engines.vllm_reload import EXTENSION, RELOAD_METHOD
from rollgym.engines.weights import WeightsVersion

log = logging.getLogger(__name__)

_NEEDS = (
    f"start it with VLLM_SERVER_DEV_MODE=1 in its environment and `--worker-extension-cls {EXTENSION}` "
    "(rollgym importable by the server's Python)"
)


def server_root(url: str) -> str:
    """`http://host:port` from a server URL or its OpenAI base (`.../v1`)."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _shared_memory_dir() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


class VLLMServerWeightTransfer:
    """Syncs a trainer's weights into the vLLM server at `base_url`, which runs on this machine; `weights` is the
    version the rollouts' engines read (`AsyncRolloutWorker(weights=...)`); `directory` holds the weights file (a
    temporary one in `/dev/shm` by default, removed by `destroy`)."""

    def __init__(
        self,
        base_url: str,
        *,
        weights: WeightsVersion | None = None,
        directory: str | os.PathLike | None = None,
        timeout_s: float = 600.0,
    ) -> None:
        self.base_url = server_root(base_url)
        self.weights = weights if weights is not None else WeightsVersion()
        self._given_dir = None if directory is None else os.fspath(directory)
        self.directory: str | None = self._given_dir
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s)
        self._checkpoint = ""  # the server's own weights: what a failed first sync restores
        self._failure: BaseException | None = None
        self.sync_s: list[float] = []  # seconds each successful send took (write + reload)
        self.failures: list[str] = []

    # --- the protocol ---------------------------------------------------------------------------
    def init_weight_transfer(self) -> None:
        """Check the server can take weights this way (dev routes, the reload extension); make the directory."""
        try:
            paused = self._http.get("/is_paused")
        except httpx.HTTPError as exc:
            raise WeightSyncError(f"cannot reach the vLLM server at {self.base_url}: {exc}") from None
        if paused.status_code == 404:
            raise WeightSyncError(f"the vLLM server at {self.base_url} has no /pause route: {_NEEDS}")
        ping = self._http.post("/collective_rpc", json={"method": "rollgym_ping"})
        if ping.status_code != 200:
            raise WeightSyncError(
                f"the vLLM server at {self.base_url} cannot reload weights from a file "
                f"(HTTP {ping.status_code}: {ping.text[:300]}): {_NEEDS}"
            )
        cards = self._http.get("/v1/models").json().get("data", [])
        self._checkpoint = str(cards[0].get("root") or cards[0].get("id")) if cards else ""
        if self.directory is None:
            self.directory = tempfile.mkdtemp(prefix="rollgym-weights-", dir=_shared_memory_dir())
        os.makedirs(self.directory, exist_ok=True)

    def pause(self) -> None:
        """Hold back new requests, then pause the server, aborting the requests in flight."""
        self.weights.pause()
        self._guarded(lambda: self._post("/pause", params={"mode": "abort"}))

    def send_weights(self, iterator: Iterator[tuple[str, Any]]) -> None:
        """Write the weights to a file and have the server reload them in place; on failure, restore the last good."""
        assert self.directory is not None, "init_weight_transfer() makes the directory"
        staged, current = os.path.join(self.directory, "next.safetensors"), self._current_file()
        started = time.perf_counter()
        sent = False
        try:
            from safetensors.torch import save_file

            save_file({name: tensor.detach().contiguous().cpu() for name, tensor in iterator}, staged)
            sent = True
            self._reload(staged)
            os.replace(staged, current)
        except Exception as exc:  # noqa: BLE001 - a failed sync is recorded and survived (see the module docstring)
            self._failure = exc
            self.failures.append(f"{type(exc).__name__}: {exc}")
            log.warning("weight sync to %s failed (%s); the old weights stay", self.base_url, exc)
            if sent:  # the server may hold part of the new weights: reload the last ones that loaded whole
                restore = current if os.path.exists(current) else self._checkpoint
                self._guarded(lambda: self._reload(restore), f"the sync failed ({exc}) and restoring {restore} failed")
        else:
            self._failure = None
            self.sync_s.append(time.perf_counter() - started)
        self._guarded(lambda: self._post("/reset_prefix_cache"))

    def resume(self) -> None:
        """Resume the server; requests go on with the new version (the old one after a failed send)."""
        self._guarded(lambda: self._post("/resume"))
        if self._failure is not None:
            self.weights.fail(f"{type(self._failure).__name__}: {self._failure}")
            return
        version = self.weights.resume()
        self._post("/update_weight_version", json={"new_version": str(version)})

    def destroy(self) -> None:
        """Remove the weights directory this transfer made; close the connection."""
        if self._given_dir is None and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
        self._http.close()

    # --- helpers ----------------------------------------------------------------------------------
    def _current_file(self) -> str:
        assert self.directory is not None
        return os.path.join(self.directory, "current.safetensors")

    def _guarded(self, step: Callable[[], None], why: str = "") -> None:
        """A step the sync cannot go on without: if it fails, the requests waiting for the sync fail too (they would
        wait forever), then the error goes to the trainer."""
        try:
            step()
        except WeightSyncError as exc:
            self.weights.fail(f"{why}: {exc}" if why else str(exc))
            if why:
                raise WeightSyncError(
                    f"weight sync to {self.base_url}: {why}: {exc}; the server's weights are unknown"
                ) from exc
            raise

    def _reload(self, path: str) -> None:
        self._post("/collective_rpc", json={"method": RELOAD_METHOD, "args": [path]})

    def _post(self, path: str, **kwargs: Any) -> None:
        try:
            response = self._http.post(path, **kwargs)
        except httpx.HTTPError as exc:
            raise WeightSyncError(f"vLLM server at {self.base_url}: POST {path} failed: {exc}") from None
        if response.status_code != 200:
            raise WeightSyncError(
                f"vLLM server at {self.base_url}: POST {path} answered HTTP {response.status_code}: {response.text[:500]}"
            )
