"""Every job's command line hands ``status``, ``reset`` and ``query`` to the shared operations
commands: a job that dispatched only some of them fell through to its own ``results`` for
``query`` and died with a traceback."""

import pytest

from deltastreams.jobs import clicks, dedup, enrich, fkjoin, pageview
from deltastreams.devtools.bench import user_counts

JOBS = {"pageview": pageview, "user_counts": user_counts, "enrich": enrich, "clicks": clicks, "dedup": dedup, "fkjoin": fkjoin}


@pytest.mark.parametrize("command", ["status", "query"])
@pytest.mark.parametrize("job", sorted(JOBS))
def test_each_job_runs_the_shared_operations_command(tmp_path, capsys, job, command):
    root = tmp_path / "root"
    fkjoin.generate(str(root), rounds=1, seed=1)  # any topics: the root exists, the application never ran

    code = JOBS[job].main([command, "--root", str(root)])

    err = capsys.readouterr().err
    if command == "query":
        assert code == 1
        assert "no application" in err and "nothing ever ran under this root" in err, err
    else:
        assert code == 0, err
    assert "Traceback" not in err
