"""Errors with Confluent Schema Registry's HTTP statuses and error codes.

The codes are the ones Confluent's clients switch on (SR ``rest/exceptions/Errors.java``):
40401 subject not found, 40402 version not found, 40403 schema not found, 409 incompatible,
42201 invalid schema, and so on. The body is always ``{"error_code": N, "message": "..."}``.
"""

from __future__ import annotations


class RegistryError(Exception):
    """A request the registry refuses; ``status`` is the HTTP status, ``code`` Confluent's."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} (error_code {self.code})"

    def body(self) -> dict[str, object]:
        return {"error_code": self.code, "message": self.message}


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(subject: str, version: object) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found for subject '{subject}'.")


def schema_not_found(detail: str = "Schema not found") -> RegistryError:
    return RegistryError(404, 40403, detail)


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40404, f"Subject '{subject}' was soft deleted. Set permanent=true "
                                     "to delete permanently")


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being "
                                     "permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40406, f"Subject '{subject}' Version {version} was soft deleted. "
                                     "Set permanent=true to delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40407, f"Subject '{subject}' Version {version} was not deleted "
                                     "first before being permanently deleted")


def subject_compat_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level "
                                     "compatibility configured")


def subject_mode_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode "
                                     "configured")


def incompatible(subject: str, messages: list[str]) -> RegistryError:
    # error_code 409 as Confluent SR up to 8.1 (40901 from 8.2); the clients key on the status.
    return RegistryError(409, 409, "Schema being registered is incompatible with an earlier "
                                   f"schema for subject \"{subject}\", details: {messages}")


def invalid_schema(detail: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema: {detail}")


def invalid_version(version: object) -> RegistryError:
    return RegistryError(422, 42202, "The specified version '" + str(version) + "' is not a "
                         "valid version id. Allowed values are between [1, 2^31-1] and the "
                         "string \"latest\"")


def invalid_compatibility(level: object) -> RegistryError:
    return RegistryError(422, 42203, f"Invalid compatibility level {level!r}. Valid values are "
                                     "none, backward, forward, full, backward_transitive, "
                                     "forward_transitive, and full_transitive")


def invalid_mode(mode: object) -> RegistryError:
    return RegistryError(422, 42204, f"Invalid mode {mode!r}. Valid values are READWRITE, "
                                     "READONLY, READONLY_OVERRIDE and IMPORT")


def operation_not_permitted(detail: str) -> RegistryError:
    return RegistryError(422, 42205, detail)


def reference_exists(detail: str) -> RegistryError:
    return RegistryError(422, 42206, detail)


def store_error(detail: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error in the backend data store - {detail}")
