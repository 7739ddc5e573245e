"""nimbus.common.host_batches: batches sent, a failed batch logged and left."""

from unittest import mock

from nimbus.common import host_batches


def test_sent_yields_the_batches_that_went_through():
    log = mock.Mock()

    def send(batch):
        if 'c' in batch:
            raise RuntimeError('broker gone')
        return len(batch)

    got = list(
        host_batches.sent(
            ['a', 'b', 'c', 'd', 'e'], 2, send, log, 'Sending', 'sends its own'
        )
    )

    assert got == [(['a', 'b'], 2), (['e'], 1)]
    log.warning.assert_called_once_with(
        '%s of %d hosts failed (%s: %s); each host %s',
        'Sending',
        2,
        'RuntimeError',
        mock.ANY,
        'sends its own',
    )


def test_sent_of_nothing_sends_nothing():
    send = mock.Mock()
    assert list(host_batches.sent([], 10, send, mock.Mock(), 'x', 'y')) == []
    send.assert_not_called()
