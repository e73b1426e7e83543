import { AppError } from '../errors.js';

/** A refused archive: nothing was imported. */
export class ImportError extends AppError {
  constructor(message: string) {
    super(400, 'import_failed', message);
  }
}
