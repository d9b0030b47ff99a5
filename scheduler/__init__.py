"""Gantt: the OpenStack Nova scheduler as a service of its own.

Gantt runs on native threads. oslo.service picks its backend the first time
one of its modules is imported (oslo.messaging imports it), and would pick
eventlet; the hook below makes threading the default. The console scripts in
``scheduler.cmd`` select eventlet explicitly, before this runs, when
``GANTT_USE_EVENTLET`` asks for it.
"""

from oslo_service import backend as _service_backend

_service_backend.register_backend_default_hook(
    lambda: _service_backend.BackendType.THREADING)
