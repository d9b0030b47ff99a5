"""Versioned objects: the payloads of Gantt's RPC APIs.

Importing :func:`register_all` registers every class with the registry the
serializer uses; call it once at process start::

    from scheduler import objects
    objects.register_all()
    spec = objects.request_spec.RequestSpec(num_instances=1, ...)
"""


def register_all():
    # Importing the modules runs the registry decorators.
    __import__('scheduler.objects.aggregate')
    __import__('scheduler.objects.instance_info')
    __import__('scheduler.objects.request_spec')
    __import__('scheduler.objects.selection')
