"""The executor refuses TCP without mTLS unless it is loopback, before any engine call."""

from __future__ import annotations

from pathlib import Path

import pytest

from executord import cli


@pytest.mark.parametrize(
    "listen", ["0.0.0.0:0", "[::]:0", "10.1.2.3:7701", "executor.example.org:7701", "::1:7701"]
)
def test_non_loopback_tcp_without_mtls_is_a_usage_error(
    listen: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 64 with one line naming the address and the way out; nothing is started."""
    code = cli.main(
        ["serve", "--operator-keyring", str(tmp_path / "none.json"), "--listen", listen,
         "--state-dir", str(tmp_path / "state")]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 64
    assert len(err.strip().splitlines()) == 1
    assert "refusing a TCP listener without mTLS" in err
    assert listen in err
    assert not (tmp_path / "state").exists()
