import pytest

from nimbus.extra_specs.ops import is_valid, match


@pytest.mark.parametrize(
    'value,req,ok',
    [
        (48, '= 24', True),
        (16, '= 24', False),
        ('48', '=48', False),  # no space: s== default
        (10, '== 10', True),
        (10, '== 11', False),
        (10, '!= 11', True),
        (10, '!= 10', False),
        (5, '>= 5', True),
        (4, '>= 5', False),
        (5, '<= 5', True),
        (6, '<= 5', False),
        ('2.1.0', 's== 2.1.0', True),
        ('2.1.1', 's== 2.1.0', False),
        ('a', 's!= b', True),
        ('b', 's!= b', False),
        ('b', 's>= b', True),
        ('a', 's>= b', False),
        ('c', 's> b', True),
        ('b', 's> b', False),
        ('b', 's<= b', True),
        ('c', 's<= b', False),
        ('a', 's< b', True),
        ('b', 's< b', False),
        ('gcc-12', '<in> gcc', True),
        ('clang', '<in> gcc', False),
        (['aes', 'mmx', 'avx'], '<all-in> aes mmx', True),
        (['aes'], '<all-in> aes mmx', False),
        ('fpu', '<or> fpu <or> gpu', True),
        ('gpu', '<or> fpu <or> gpu', True),
        ('npu', '<or> fpu <or> gpu', False),
        ('QEMU', 'QEMU', True),
        ('KVM', 'QEMU', False),
        ('abc', '== 3', False),
        (None, 's== x', False),
    ],
)
def test_operators(value, req, ok):
    assert match(value, req) is ok


def test_validity():
    assert is_valid('>= 5') and is_valid('plain') and is_valid('<or> a <or> b')
    assert (
        not is_valid('>= x')
        and not is_valid('>=')
        and not is_valid('<or> a b')
    )
