"""Reading [tool.patchforge] / patchforge.toml: the model, and errors with file and line."""
from __future__ import annotations

import tomllib

import pytest

from patchforge.errors import ConfigError
from patchforge.formats.config import (find_config_table, load_config, starting_config_text,
                                       upstream_table_text)
from patchforge.model.config import UpstreamConfig

GOOD = b"""[project]
name = "x"

[tool.patchforge]
artifacts = ["entry.sh"]
compose-service = "api"

[tool.patchforge.upstreams.vllm]
kind = "wheel"
package = "vllm"
install-root = "/usr/local/lib/python3.12/dist-packages"
forge-repo = "vllm-project/vllm"
signoff = true

[tool.patchforge.upstreams.aiter]
kind = "git"
url = "https://github.com/ROCm/aiter"
follow = "main"

[tool.patchforge.profiles]
gfx942 = "MI300X"
"""


def test_reads_the_model(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_bytes(GOOD)
    config = load_config(path)
    assert list(config.upstreams) == ["vllm", "aiter"]
    assert config.upstreams["vllm"] == UpstreamConfig(
        name="vllm", kind="wheel", package="vllm",
        install_root="/usr/local/lib/python3.12/dist-packages", forge_repo="vllm-project/vllm",
        signoff=True)
    assert config.upstreams["aiter"].url == "https://github.com/ROCm/aiter"
    assert config.profiles == {"gfx942": "MI300X"} and config.artifacts == ("entry.sh",)
    assert config.compose_service == "api"


def test_pyproject_without_table_is_not_a_config(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b'[project]\nname = "x"\n')
    assert find_config_table(path) is None


@pytest.mark.parametrize("old, new, key, line_text", [
    (b'kind = "git"', b'kind = "svn"', "tool.patchforge.upstreams.aiter.kind",
     'kind = "svn"'),
    (b'url = "https://github.com/ROCm/aiter"\n', b"", "tool.patchforge.upstreams.aiter.url",
     "[tool.patchforge.upstreams.aiter]"),
    (b'gfx942 = "MI300X"', b"gfx942 = 3", "tool.patchforge.profiles.gfx942", "gfx942 = 3"),
    (b'artifacts = ["entry.sh"]', b"artifacts = [1]", "tool.patchforge.artifacts[0]",
     "artifacts = [1]"),
    (b'install-root = "/usr', b'install-root = ["/usr"]\n#', "install-root", "install-root ="),
])
def test_errors_name_key_and_line(tmp_path, old, new, key, line_text):
    path = tmp_path / "pyproject.toml"
    data = GOOD.replace(old, new, 1)
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert key in str(info.value) and info.value.path == str(path)
    assert line_text in data.decode().splitlines()[info.value.line - 1]


def test_toml_syntax_error_has_the_line(tmp_path):
    path = tmp_path / "patchforge.toml"
    path.write_bytes(b"[upstreams.x]\nkind = \n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.line == 2 and "not valid TOML" in str(info.value)


def test_generated_text_parses_and_round_trips(tmp_path):
    for prefix in ("", "tool.patchforge."):
        upstream = UpstreamConfig(name="v", kind="dir", path='we"ird\\path',
                                  install_root="/opt")
        text = starting_config_text(prefix) + "\n" + upstream_table_text(prefix, upstream)
        doc = tomllib.loads(text)
        table = doc["tool"]["patchforge"] if prefix else doc
        assert table["upstreams"]["v"] == {"kind": "dir", "path": 'we"ird\\path',
                                           "install-root": "/opt"}
        assert table["profiles"] == {}
