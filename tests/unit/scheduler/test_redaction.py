"""Passwords in URLs and driver errors never reach a log line or an error.

A table of the URL forms SQLAlchemy and oslo.messaging accept, then
properties: whatever password hypothesis makes up, percent-encoded or raw,
it is not in what the redaction functions return.
"""

import urllib.parse

import hypothesis
from hypothesis import strategies as st
import pytest

from scheduler import config


@pytest.mark.parametrize('url, expected', [
    ('postgresql+psycopg2://gantt:s3cret@db/gantt?sslmode=require',
     'postgresql+psycopg2://gantt:***@db/gantt?sslmode=require'),
    # Raw special characters: SQLAlchemy reads up to the last '@'.
    ('postgresql+psycopg2://gantt:a,b/c#d?e@db:5432/gantt',
     'postgresql+psycopg2://gantt:***@db:5432/gantt'),
    ('mysql+pymysql://root:p%40ss%2Fw%3Frd@127.0.0.1/test?charset=utf8',
     'mysql+pymysql://root:***@127.0.0.1/test?charset=utf8'),
    ('postgresql://gantt@db/gantt?password=s3cret&sslmode=require',
     'postgresql://gantt@db/gantt?password=***&sslmode=require'),
    ('mysql+pymysql://root@h/test?sslpassword=k3y&PWD=s3cret',
     'mysql+pymysql://root@h/test?PWD=***&sslpassword=***'),
    ('mysql+pymysql://root@127.0.0.1/test',
     'mysql+pymysql://root@127.0.0.1/test'),
    ('sqlite:////var/lib/gantt/gantt.sqlite',
     'sqlite:////var/lib/gantt/gantt.sqlite'),
    ('sqlite://', 'sqlite://'),
    # A raw '@' makes SQLAlchemy read part of the password as the host.
    ('postgresql://gantt:p@ss@db/gantt', 'postgresql://<unparseable URL>'),
    ('not a url s3cret', 'url://<unparseable URL>'),
    (None, None),
    ('', ''),
])
def test_redact_database_url(url, expected):
    assert config.redact_database_url(url) == expected


@pytest.mark.parametrize('url, expected', [
    ('rabbit://guest:guest@127.0.0.1:5672/',
     'rabbit://guest:***@127.0.0.1:5672/'),
    ('rabbit://a:p1@h1:5672,b:p2@h2:5672,c:p3@h3:5673/vhost',
     'rabbit://a:***@h1:5672,b:***@h2:5672,c:***@h3:5673/vhost'),
    ('rabbit://a:p%2C%2F%23%3F%40@h1:5672,b:q@[::1]:5672/',
     'rabbit://a:***@h1:5672,b:***@[::1]:5672/'),
    ('rabbit://gantt@mq/?ssl=1&password=s3cret',
     'rabbit://gantt@mq/?ssl=1&password=***'),
    ('rabbit://mq1,mq2/', 'rabbit://mq1,mq2/'),
    ('fake://', 'fake://'),
    # Raw characters that end urllib's host part, or split the hosts.
    ('rabbit://a:pa,ss@h1:5672/', 'rabbit://<unparseable URL>'),
    ('rabbit://a:pa/ss@h1:5672/', 'rabbit://<unparseable URL>'),
    ('rabbit://a:pa#ss@h1/', 'rabbit://<unparseable URL>'),
    ('rabbit://a:pa?ss@h1/', 'rabbit://<unparseable URL>'),
    ('rabbit://a:p1@h1,h2/', 'rabbit://<unparseable URL>'),
    ('s3cret', 'url://<unparseable URL>'),
    (None, None),
])
def test_redact_transport_url(url, expected):
    assert config.redact_transport_url(url) == expected


@pytest.mark.parametrize('text, expected', [
    ('connection to postgresql://gantt:s3cret@db/gantt failed',
     'connection to postgresql://gantt:***@db/gantt failed'),
    ("cannot use 'rabbit://a:p1@h1,b:p2@h2/': refused",
     "cannot use 'rabbit://***@h2/': refused"),
    ('dsn host=db user=gantt password=s3cret dbname=gantt',
     'dsn host=db user=gantt password=*** dbname=gantt'),
    ('{"password": "s3cret"}', '{"password": "***"}'),
    ('no secret here', 'no secret here'),
    (None, None),
])
def test_mask_secrets(text, expected):
    assert config.mask_secrets(text) == expected


def test_scrub_finds_a_password_quoted_in_any_form():
    url = 'postgresql://gantt:p%2Fw%23s3cret@db/gantt'
    text = "FATAL for 'p/w#s3cret' (\"p%2Fw%23s3cret\") at gantt:p/w#s3cret@db"
    assert config.scrub(text, [url, None]) == (
        "FATAL for '***' (\"***\") at gantt:***@db")


@pytest.mark.parametrize('text, expected', [
    # The password's letters in the message's own words stay.
    ('Invalid request: flavor.vcpus must be at least 1, not 0',
     'Invalid request: flavor.vcpus must be at least 1, not 0'),
    ('user guest refused; the guest user', 'user guest refused; the guest '
     'user'),
    # Where it stands as a password, it goes.
    ('cannot reach rabbit://guest:guest@127.0.0.1:1/ (Invalid request)',
     'cannot reach rabbit://guest:***@127.0.0.1:1/ (Invalid request)'),
    ('dsn host=db password=guest sslpassword=guest user=guest',
     'dsn host=db password=*** sslpassword=*** user=guest'),
    ('{"password": "guest"}', '{"password": "***"}'),
    ("the broken URL guest:guest@127.0.0.1, port 'guest'",
     "the broken URL guest:***@127.0.0.1, port '***'"),
])
def test_scrub_masks_a_password_only_where_it_is_one(text, expected):
    assert config.scrub(text, ['rabbit://guest:guest@127.0.0.1:5672/']) == \
        expected


def test_scrub_leaves_a_word_holding_a_piece_of_a_password():
    # SCRUB_MIN_PIECE letters of 'requests' are in "request", unquoted.
    url = 'postgresql://gantt:requests@db/gantt'
    assert config.scrub("Invalid request 'quest'", [url]) == (
        "Invalid request '***'")


def test_scrub_masks_a_piece_of_a_password():
    # What kombu said of a password with a percent-encoded '/' in it.
    url = 'rabbit://gantt:Tls%2Cs3cr%2Ft@127.0.0.1:5671/'
    text = "Port could not be cast to integer value as 'Tls%2Cs3cr'"
    assert config.scrub(text, [url]) == (
        "Port could not be cast to integer value as '***'")


# Passwords long enough not to occur by chance in the rest of the URL.
passwords = st.text(
    alphabet=st.characters(codec='utf-8', exclude_categories=['Cs', 'Cc']),
    min_size=8, max_size=24)
users = st.text(alphabet='abcdefghijklmnopqrstuvwxyz_', min_size=1,
                max_size=8)
settings = hypothesis.settings(max_examples=300, deadline=None)


def _forms(password):
    return (password, urllib.parse.quote(password, ''),
            urllib.parse.quote_plus(password))


def _absent(passwords, skeleton, output):
    """None of ``passwords``, raw or percent-encoded, is in ``output``
    (unless it happens to be a piece of ``skeleton``, the URL without
    them)."""
    for password in passwords:
        hypothesis.assume(not any(form in skeleton
                                  for form in _forms(password)))
    for password in passwords:
        for form in _forms(password):
            assert form not in output, (skeleton, output)


@settings
@hypothesis.given(users, passwords, st.booleans(), st.sampled_from([
    'postgresql+psycopg2', 'mysql+pymysql', 'sqlite']))
def test_no_database_password_survives(user, password, encode, scheme):
    secret = urllib.parse.quote(password, '') if encode else password
    for template, form in (
            ('%s://%s:%%s@db:5432/gantt' % (scheme, user), secret),
            ('%s://%s@db/gantt?sslmode=require&password=%%s' % (
                scheme, user), urllib.parse.quote_plus(password))):
        url = template % form
        skeleton = template % ''
        _absent([password], skeleton, config.redact_database_url(url))
        if not any(char.isspace() for char in password):
            # Free text: a URL ends at white space.
            _absent([password], skeleton,
                    config.mask_secrets('error: ' + url))


@settings
@hypothesis.given(st.lists(st.tuples(users, passwords), min_size=1,
                           max_size=3), st.booleans())
def test_no_transport_password_survives(credentials, encode):
    template = 'rabbit://%s/gantt' % ','.join(
        '%s:%%s@mq%d:5672' % (user, number)
        for number, (user, _password) in enumerate(credentials))
    passwords = [password for _user, password in credentials]
    url = template % tuple(
        urllib.parse.quote(password, '') if encode else password
        for password in passwords)
    skeleton = template % (('',) * len(passwords))
    _absent(passwords, skeleton, config.redact_transport_url(url))
    _absent(passwords, skeleton, config.scrub('error: ' + url, [url]))
