"""An mmproj is read in its own types and refused, in one line, when it cannot be trusted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bench.synth.mmproj import TINY, write_mmproj
from engine.errors import CorruptModelError, ModelNotFoundError, UnsupportedModelError
from engine.vision.mmproj import check_pairing, open_mmproj


@pytest.mark.parametrize("mtype", ["F16", "BF16", "Q8_0"])
def test_weights_stay_in_the_files_type(
    tiny_mmproj: Callable[[str, str], Path], mtype: str
) -> None:
    mm = open_mmproj(tiny_mmproj("qwen3vl", mtype))
    assert mm.qtype("v.blk.0.attn_qkv.weight") == mtype
    assert mm.tensor("v.blk.0.attn_qkv.weight").data.dtype != np.float32  # mapped, not copied
    assert mm.weight("v.blk.0.attn_qkv.weight").shape == (192, 64)


def test_parameters_and_widths(tiny_mmproj: Callable[[str, str], Path]) -> None:
    assert open_mmproj(tiny_mmproj("gemma3")).out_width == 128
    deep = open_mmproj(tiny_mmproj("qwen3vl-deepstack"))
    assert deep.deepstack == (0, 1)
    assert deep.out_width == 128 * 3  # the main merger and two deepstack mergers, side by side
    g4 = open_mmproj(tiny_mmproj("gemma4v"))
    assert g4.params.merge == 3
    assert g4.clamps["mm.input_projection.weight"] == (-1.5, 1.5, -2.0, 2.0)


def test_an_unknown_projector_type_is_refused_by_name(tmp_path: Path) -> None:
    path = write_mmproj(
        tmp_path / "p.gguf", TINY["gemma3"], metadata={"clip.projector_type": "pixtral"}
    )
    with pytest.raises(UnsupportedModelError, match=r"'pixtral' .*llama\.cpp runs it"):
        open_mmproj(path)


def test_tensors_that_disagree_with_the_metadata_are_refused(tmp_path: Path) -> None:
    path = write_mmproj(
        tmp_path / "p.gguf", TINY["gemma4v"], metadata={"clip.vision.feed_forward_length": 128}
    )
    with pytest.raises(CorruptModelError, match=r"ffn_gate.weight is \[96, 64\].*\[128, 64\]"):
        open_mmproj(path)


def test_a_missing_tensor_is_refused(tmp_path: Path) -> None:
    path = write_mmproj(tmp_path / "p.gguf", TINY["qwen3vl"], drop=("v.patch_embd.weight.1",))
    with pytest.raises(CorruptModelError, match=r"lacks the tensor v\.patch_embd\.weight\.1"):
        open_mmproj(path)


def test_a_truncated_file_is_refused(
    tiny_mmproj: Callable[[str, str], Path], tmp_path: Path
) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_mmproj("gemma3").read_bytes()[:-1000])
    with pytest.raises(CorruptModelError, match="truncated"):
        open_mmproj(cut)


def test_a_language_model_is_not_a_projector(tmp_path: Path) -> None:
    from tests.engine.support.tiny_gguf import write_tiny_gguf

    with pytest.raises(UnsupportedModelError, match="not a vision projector"):
        open_mmproj(write_tiny_gguf(tmp_path / "lm.gguf"))
    with pytest.raises(ModelNotFoundError):
        open_mmproj(tmp_path / "absent.gguf")


def test_pairing_with_another_family_or_width_is_refused(
    tiny_mmproj: Callable[[str, str], Path],
) -> None:
    mm = open_mmproj(tiny_mmproj("qwen3vl"))
    check_pairing(mm, "qwen35", 128)
    with pytest.raises(
        UnsupportedModelError, match=r"Qwen3-VL / Qwen3\.5 vision projector.*'gemma3'"
    ):
        check_pairing(mm, "gemma3", 128)
    with pytest.raises(UnsupportedModelError, match=r"128 values per token.*1024 wide"):
        check_pairing(mm, "qwen35", 1024)
    deep = open_mmproj(tiny_mmproj("qwen3vl-deepstack"))  # 128 wide, and two deepstack parts
    check_pairing(deep, "qwen3vl", 128, deepstack_layers=2)  # Qwen3-VL: the LM adds them
    with pytest.raises(UnsupportedModelError, match=r"2 deepstack feature layers.*takes 0"):
        check_pairing(deep, "qwen35", 128)  # Qwen3.5 has no deepstack: the rows would be lost
    with pytest.raises(UnsupportedModelError, match=r"0 deepstack feature layers.*takes 3"):
        check_pairing(mm, "qwen3vl", 128, deepstack_layers=3)
    with pytest.raises(UnsupportedModelError, match=r"384 values per token.*256 wide"):
        check_pairing(deep, "qwen3vl", 256, deepstack_layers=2)
