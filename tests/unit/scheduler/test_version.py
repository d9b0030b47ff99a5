"""The release and commit a service says it was built from: each source
in turn, and ``unknown`` rather than an error when none answers."""

import subprocess

from scheduler import version


def test_the_release_is_the_installed_package_version(monkeypatch):
    assert version.release() not in ('', None)
    monkeypatch.setattr(version, 'PACKAGE', 'gantt-not-installed')
    assert version.release() == 'unknown'


def test_the_environment_names_the_commit_first(monkeypatch, tmp_path):
    written = tmp_path / 'COMMIT'
    written.write_text('from-the-file\n')
    monkeypatch.setattr(version, 'COMMIT_FILE', str(written))
    monkeypatch.setenv(version.COMMIT_ENV, ' from-the-environment ')
    assert version.commit() == 'from-the-environment'
    monkeypatch.delenv(version.COMMIT_ENV)
    assert version.commit() == 'from-the-file'


def test_a_checkout_gives_its_head(monkeypatch, tmp_path):
    checkout = tmp_path / 'src'
    (checkout / 'scheduler').mkdir(parents=True)
    subprocess.run(['git', 'init', '-q', str(checkout)], check=True)
    subprocess.run(['git', '-C', str(checkout), '-c', 'user.name=t',
                    '-c', 'user.email=t@example.com', 'commit', '-q',
                    '--allow-empty', '-m', 'first'], check=True)
    head = subprocess.run(['git', '-C', str(checkout), 'rev-parse', 'HEAD'],
                          capture_output=True, text=True,
                          check=True).stdout.strip()
    monkeypatch.delenv(version.COMMIT_ENV, raising=False)
    monkeypatch.setattr(version, 'COMMIT_FILE',
                        str(checkout / 'scheduler' / 'COMMIT'))
    assert version.commit() == head


def test_without_any_source_the_commit_is_unknown(monkeypatch, tmp_path):
    (tmp_path / 'scheduler').mkdir()
    monkeypatch.delenv(version.COMMIT_ENV, raising=False)
    monkeypatch.setattr(version, 'COMMIT_FILE',
                        str(tmp_path / 'scheduler' / 'COMMIT'))
    assert version.commit() == 'unknown'
    # A .git that git cannot read, or no git at all: still unknown.
    (tmp_path / '.git').write_text('gitdir: /nowhere\n')
    assert version.commit() == 'unknown'

    def no_git(*args, **kwargs):
        raise FileNotFoundError('git')

    monkeypatch.setattr(subprocess, 'run', no_git)
    assert version.commit() == 'unknown'
