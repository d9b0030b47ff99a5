"""The messages Nova 34 sent, as tools/record_nova_wire.py recorded them."""

import json
import os

DIRECTORY = os.path.join(os.path.dirname(__file__), 'fixtures')


def load(name):
    with open(os.path.join(DIRECTORY, 'nova34_%s.json' % name)) as handle:
        return json.load(handle)


def args(name):
    return load(name)['message']['args']
