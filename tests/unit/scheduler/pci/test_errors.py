"""PCI errors cross RPC as themselves, so a caller can catch a bad PCI
request as InvalidRequest and a lost PCI race as ClaimFailed."""

import sys

from oslo_messaging._drivers import common as driver_common
import pytest

from scheduler import exception
from scheduler.pci import errors
from scheduler import rpc


def _over_the_wire(error):
    try:
        raise error
    except Exception:
        data = driver_common.serialize_remote_exception(sys.exc_info())
    return driver_common.deserialize_remote_exception(
        data, rpc.ALLOWED_EXMODS)


@pytest.mark.parametrize('error, base, text', [
    (errors.PciRequestAliasNotDefined(alias='nic'),
     exception.InvalidRequest, "PCI alias 'nic'"),
    (errors.PciInvalidRequest(value='qat:x', reason='bad count'),
     exception.InvalidRequest, "'qat:x': bad count"),
    (errors.InvalidPCINUMAAffinity(policy='near', where='image property x',
                                   valid='required'),
     exception.InvalidRequest, "'near' in image property x"),
    (errors.ImagePCINUMAPolicyForbidden(image='legacy', flavor='required'),
     exception.InvalidRequest, "hw_pci_numa_affinity_policy='legacy'"),
    (errors.PciDevicesUnavailable(key='k', wanted=2, free=1, count=2),
     exception.ClaimFailed, '2 more wanted, 1 of 2 free'),
])
def test_errors_reach_the_caller_as_themselves(error, base, text):
    received = _over_the_wire(error)
    assert isinstance(received, type(error))
    assert isinstance(received, base)
    assert text in str(received)
