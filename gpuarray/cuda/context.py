"""The CUDA context of the GPU factory: availability, threads, fork, faults.

In: the factory (:class:`gpuarray.GPU`) and the threads that call it.
Out: whether a GPU can be used here (:func:`gpu_unavailable_reason`), the
device's primary context made current in each calling thread (and popped
again when the thread ends), and clear errors where the context cannot be
used: in a child process forked after CUDA was initialised, or after a
kernel fault left it unusable.

Every factory method that touches the device is wrapped by
:func:`device_call`: it checks a thread-local flag, so that only the first
call from a thread takes the slow path (:meth:`ContextFunctions._attach`),
which pushes the context -- or raises.

pycuda is imported lazily, so the package imports (and the CPU factory
works) on machines without CUDA.
"""
import atexit
import functools
import os
import threading
import weakref

from . import driver

_UNAVAILABLE = []
#: the process that initialised CUDA; a forked child inherits a copy of the
#: driver's state that it cannot use
_CUDA_PID = []
FORKED = ("gpuarray.GPU cannot be used in a child process forked after CUDA was "
          "initialised; use the 'spawn' start method")
#: every factory, so that a forked child can send them all to the slow path
_FACTORIES = weakref.WeakSet()
#: device id -> its retained primary context
_PRIMARY = {}


def gpu_unavailable_reason():
    """Why no GPU can be used here, or None when one can."""
    if _CUDA_PID and _CUDA_PID[0] != os.getpid():
        return FORKED
    if not _UNAVAILABLE:
        try:
            import pycuda.driver as drv
            drv.init()
            _CUDA_PID.append(os.getpid())
            if drv.Device.count() == 0:
                raise RuntimeError("no CUDA device found")
            _UNAVAILABLE.append(None)
        except Exception as err:  # ImportError, no driver, no device
            _UNAVAILABLE.append(f"{type(err).__name__}: {err}")
    return _UNAVAILABLE[0]


def gpu_available():
    """True when pycuda imports and a CUDA device is present."""
    return gpu_unavailable_reason() is None


class _Attached(threading.local):
    """Per thread: True once the factory's context is current in the thread."""

    ready = False


def _after_fork_in_child():
    # the child's copy of the forking thread still reads ready=True: send
    # every factory's next call to the slow path, which raises
    for gpu in list(_FACTORIES):
        gpu._detach_threads()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Pushed:
    """Pops the contexts pushed on one thread when that thread ends.

    pycuda aborts the process if a thread ends with a context on its stack.
    Kept in a module-level thread-local, so it is dropped -- and pops -- in
    its own thread, as the thread exits.
    """

    def __init__(self):
        self.contexts = []
        self.thread, self.pid = threading.get_ident(), os.getpid()

    def __call__(self):
        if self.thread != threading.get_ident() or self.pid != os.getpid():
            return  # not the thread (or process) that pushed: nothing to pop
        while self.contexts:
            self.contexts.pop().pop()  # pycuda's Context.pop pops the current one

    def __del__(self):
        try:
            self()
        except Exception:  # noqa: BLE001 - a finalizer must never raise
            pass


_PUSHED = threading.local()


def _push(context):
    """Make ``context`` current in the calling thread, popped again when it ends."""
    context.push()
    pushed = getattr(_PUSHED, "pushed", None)
    if pushed is None:
        pushed = _PUSHED.pushed = _Pushed()
        if threading.current_thread() is threading.main_thread():
            # the main thread's locals outlive pycuda at exit: pop earlier
            atexit.register(pushed)
    pushed.contexts.append(context)


def _is_driver_error(err):
    """True for pycuda's exceptions and for :class:`driver.DriverError`."""
    return isinstance(err, driver.DriverError) or type(err).__module__.startswith("pycuda")


def device_call(method):
    """Wrap a factory method that talks to the device.

    The first call from a thread attaches the factory's context to it; a
    driver error caused by a faulted kernel becomes a clear RuntimeError,
    raised again by every later call.
    """
    @functools.wraps(method)
    def call(self, *args):
        if not self._attached.ready:
            self._attach()
        try:
            return method(self, *args)
        except Exception as err:
            self._device_error(err)
            raise
    return call


class ContextFunctions:
    """The factory's side of the context: taken once, attached per thread.

    The factory keeps ``context``, ``_drv`` (pycuda's driver module),
    ``_attached`` (the per-thread flag, which its dispatcher reads as its
    own C field), ``_pid`` and ``_failure``.
    """

    def _take_context(self, drv, device_id):
        """Use the current context, else push the device's primary context."""
        self._drv = drv
        self.context = drv.Context.get_current()
        if self.context is None:
            # one pycuda object per device and process: pycuda frees memory
            # only in a thread where its own context object is current (or
            # in the thread that made the object)
            self.context = _PRIMARY.get(device_id)
            if self.context is None:
                self.context = _PRIMARY.setdefault(
                    device_id, drv.Device(device_id).retain_primary_context())
            _push(self.context)
        self._detach_threads()
        self._attached.ready = True
        self._pid = os.getpid()
        #: why the context is unusable (a kernel faulted), once it is
        self._failure = None
        _FACTORIES.add(self)

    def _detach_threads(self):
        """Send every thread's next device call to :meth:`_attach` (a new
        per-thread flag, which the dispatcher reads as its own C field)."""
        self._attached = _Attached()
        dispatcher = self.__dict__.get("_dispatcher")
        if dispatcher is not None:
            dispatcher.attached = self._attached

    def _attach(self):
        """First device call from this thread: make the context current, or
        raise if this process or the context cannot use the GPU any more."""
        if self._failure is not None:
            raise RuntimeError(self._failure)
        if os.getpid() != self._pid:
            raise RuntimeError(FORKED)
        if self._drv.Context.get_current() != self.context:
            _push(self.context)
        self._attached.ready = True

    def _device_error(self, err):
        """After an exception in a device call: raise clearly if it was a
        driver error that left the context unusable."""
        if _is_driver_error(err):
            self._check_context(err)

    def _check_context(self, err):
        """After a driver error: raise clearly if a kernel fault killed the context."""
        reason = driver.sticky_error()
        if reason is None:
            return  # an ordinary error (bad argument, out of memory): recoverable
        self._failure = (f"the GPU context hit an unrecoverable error ({reason} in an "
                         f"earlier kernel); this process must restart to use the GPU")
        # every thread's next call takes the slow path, which raises at once
        self._detach_threads()
        raise RuntimeError(self._failure) from err
