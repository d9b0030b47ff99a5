"""Fixtures of the gantt-manage tests: run it in-process, read its output."""

import collections
import logging as std_logging

import pytest

from scheduler.cmd import manage

Result = collections.namedtuple('Result', 'code out err')


@pytest.fixture(autouse=True)
def restore_logging():
    """main() sets up oslo.log on the root logger; undo it after the test
    so that no handler keeps writing to a closed capture stream."""
    root = std_logging.getLogger()
    level = root.level
    yield
    for handler in list(root.handlers):
        if type(handler) is std_logging.StreamHandler:
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
def conf_file(tmp_path):
    """The (empty) file given as ``--config-file``; tests may fill it."""
    path = tmp_path / 'gantt.conf'
    path.write_text('')
    return path


@pytest.fixture
def run(conf_file, capsys):
    """Run gantt-manage with ``--config-file``; return code, out, err."""
    def run_manage(*args):
        code = manage.main(['gantt-manage', '--config-file', str(conf_file)]
                           + list(args))
        out, err = capsys.readouterr()
        return Result(code, out, err)
    return run_manage
