"""Console-script mains; the only place that may import eventlet.

Gantt runs on native threads. To run a daemon under eventlet instead, set
``GANTT_USE_EVENTLET=1`` in its environment (for a systemd unit:
``Environment=GANTT_USE_EVENTLET=1``). The variable is read here, when the
first console-script module is imported and before any of them imports the
rest of Gantt, so the monkey patching happens before anything creates a
thread, a lock or a socket.
"""

import os
import warnings

EVENTLET_ENV = 'GANTT_USE_EVENTLET'

# futurist and oslo.utils import eventlet whenever it is installed, and
# eventlet warns on import; an operator reading a daemon's output should
# not see that in threading mode.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
warnings.filterwarnings('ignore', message='eventletutils module is deprecated')


def eventlet_requested():
    return os.environ.get(EVENTLET_ENV, '').strip().lower() in (
        '1', 'true', 'yes', 'on')


if eventlet_requested():
    import eventlet

    eventlet.monkey_patch()

    from oslo_service import backend as _service_backend

    _service_backend.init_backend(_service_backend.BackendType.EVENTLET)
